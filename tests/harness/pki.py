"""A throwaway PKI for the local control plane: one CA, serving and client certificates."""
from __future__ import annotations

import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=30)


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def _has_subject_key_identifier(cert) -> bool:
    try:
        cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
        return True
    except x509.ExtensionNotFound:
        return False


class CA:
    """A certificate authority kept as two PEM files in a folder.

    Its certificates are what RFC 5280 asks (a Subject Key Identifier on each, an Authority Key Identifier on the
    ones it issues): Python 3.13's ``ssl.create_default_context()`` verifies with ``VERIFY_X509_STRICT``, which
    refuses a chain without them ("Missing Authority Key Identifier"), and the harness, the tests and the
    ansible-core 2.21 job (Python 3.13) verify the cluster's and the emulator's certificates that way."""

    def __init__(self, folder: str):
        self.folder = folder
        self.cert_path = os.path.join(folder, "ca.crt")
        self.key_path = os.path.join(folder, "ca.key")
        if os.path.exists(self.cert_path) and os.path.exists(self.key_path):
            with open(self.cert_path, "rb") as handle:
                cert = x509.load_pem_x509_certificate(handle.read())
            # A CA written before the key identifiers were added is made anew (its folder is a run's own).
            if _has_subject_key_identifier(cert):
                self.cert = cert
                with open(self.key_path, "rb") as handle:
                    self.key = serialization.load_pem_private_key(handle.read(), None)
                return
        os.makedirs(folder, mode=0o700, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kueueops-local-ca")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, key_cert_sign=True, crl_sign=True,
                    content_commitment=False, key_encipherment=False, data_encipherment=False,
                    key_agreement=False, encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        _write(self.key_path, _key_pem(self.key))
        _write(self.cert_path, self.cert.public_bytes(serialization.Encoding.PEM))

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, path_prefix: str, common_name: str, organizations=(), dns_names=(),
              ip_addresses=(), server=False, client=False) -> tuple[str, str]:
        """Issue a certificate; write `<prefix>.crt` and `<prefix>.key` (0600). Returns both paths."""
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
        attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
        now = datetime.datetime.now(datetime.timezone.utc)
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attrs))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        sans = [x509.DNSName(n) for n in dns_names]
        sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        crt_path, key_path = path_prefix + ".crt", path_prefix + ".key"
        _write(key_path, _key_pem(key))
        _write(crt_path, cert.public_bytes(serialization.Encoding.PEM))
        return crt_path, key_path


def service_account_keypair(prefix: str) -> tuple[str, str]:
    """An RSA key pair that signs and verifies service account tokens."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    priv, pub = prefix + ".key", prefix + ".pub"
    _write(priv, _key_pem(key))
    _write(pub, key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return priv, pub
