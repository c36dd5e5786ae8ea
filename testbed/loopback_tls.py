"""Self-signed certificates for the tests' loopback HTTPS servers (chart repositories, Azure, the
reader's client, a webhook's wrong CA)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


# A certificate that is its own CA: clients trust it as they would a private mirror's.
OWN_CA = ("basicConstraints=critical,CA:TRUE", "keyUsage=critical,digitalSignature,keyCertSign")


def self_signed(cert: Path, key: Path, subject: str, *extensions: str, days: int = 2) -> tuple[Path, Path]:
    """A self-signed certificate (RSA 2048, its key unencrypted) for `subject`, with the X.509
    `extensions` given as openssl's -addext values; (cert, key)."""
    if not shutil.which("openssl"):
        raise RuntimeError("openssl is needed to make the test servers' certificate")
    cert.parent.mkdir(parents=True, exist_ok=True)
    args = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days), "-subj", subject]
    args += ["-keyout", str(key), "-out", str(cert)]
    for extension in extensions:
        args += ["-addext", extension]
    subprocess.run(args, check=True, capture_output=True)
    return cert, key


def make_tls(folder: Path) -> tuple[Path, Path]:
    """cert.pem and key.pem for 127.0.0.1; the certificate is its own CA, so clients trust it
    through REQUESTS_CA_BUNDLE as they would a private mirror's."""
    return self_signed(
        folder / "cert.pem",
        folder / "key.pem",
        "/CN=127.0.0.1",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        *OWN_CA,
        "extendedKeyUsage=serverAuth",
    )
