"""A self-signed certificate for the tests' loopback HTTPS servers (chart repositories, Azure)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def make_tls(folder: Path) -> tuple[Path, Path]:
    """cert.pem and key.pem for 127.0.0.1; the certificate is its own CA, so clients trust it
    through REQUESTS_CA_BUNDLE as they would a private mirror's."""
    if not shutil.which("openssl"):
        raise RuntimeError("openssl is needed to make the test servers' certificate")
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(folder / "key.pem"),
            "-out",
            str(folder / "cert.pem"),
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,digitalSignature,keyCertSign",
            "-addext",
            "extendedKeyUsage=serverAuth",
        ],
        check=True,
        capture_output=True,
    )
    return folder / "cert.pem", folder / "key.pem"
