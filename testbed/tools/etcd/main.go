// Command etcd is etcd's own server entry point, built from its Go module at a pinned
// release because Debian's etcd is too old for the Kubernetes release the e2e tier runs.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
