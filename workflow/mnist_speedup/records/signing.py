"""Optional signatures for bundles shared between machines, with OpenSSH's ``ssh-keygen -Y``.

A bundle's manifest proves that nothing in it was damaged or edited by
mistake since it was made (integrity); it cannot prove who made it: anyone can
make a consistent bundle. Where that matters (bundles from machines you do
not control), the maker signs the bundle with an SSH key, as git signs
commits (``bundle_signing_key`` in the config writes ``bundle-<host>.tar.gz.sig``
beside it), and the machine that merges it lists the keys it trusts in an
allowed-signers file (``trusted_keys``; OpenSSH's format, ``principal
key-type key``). With ``trusted_keys`` set, a bundle in ``extra_runs`` is used
only if its signature verifies against one of those keys. The threat model is
in docs/bundles.md.
"""

from __future__ import annotations

import base64
import shutil
import struct
import subprocess
from pathlib import Path

#: what the signatures are for: a signature made for anything else (an email, a commit) never verifies here
NAMESPACE = "mnist-speedup-bundle"


class SignatureError(ValueError):
    pass


def signature_path(bundle) -> Path:
    return Path(f"{bundle}.sig")


def _ssh_keygen() -> str:
    exe = shutil.which("ssh-keygen")
    if exe is None:
        raise SignatureError(
            "ssh-keygen is not installed, so bundle signatures can be neither made nor checked. "
            "Fix: install OpenSSH's client (Debian: openssh-client), or leave bundle_signing_key "
            "and trusted_keys out of the config."
        )
    return exe


def _run(args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([_ssh_keygen(), *args], input=stdin, capture_output=True, timeout=60, check=False)


def sign(bundle, key) -> Path:
    """Sign ``bundle`` with the private key at ``key``; returns the signature's path."""
    out = signature_path(bundle)
    out.unlink(missing_ok=True)  # ssh-keygen refuses to overwrite
    proc = _run(["-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE, str(bundle)])
    if proc.returncode != 0 or not out.is_file():
        raise SignatureError(
            f"could not sign {bundle} with {key}: {proc.stderr.decode(errors='replace').strip()}. "
            "Fix: set bundle_signing_key to an SSH private key without a passphrase "
            "(ssh-keygen -t ed25519 -N '' -f key), or leave it out."
        )
    return out


#: how every OpenSSH signature file begins
ARMOUR = b"-----BEGIN SSH SIGNATURE-----"


def verify(bundle, allowed_signers, sig=None) -> str:
    """The principal whose trusted key signed ``bundle`` (its signature ``sig``, by default beside it); a
    SignatureError with the true reason and the fix otherwise."""
    sig = Path(sig) if sig is not None else signature_path(bundle)
    if not sig.is_file():
        raise SignatureError(
            f"{bundle} has no signature ({sig.name} beside it), and trusted_keys asks for one. "
            "Fix: ask its maker to set bundle_signing_key and make the bundle again, or remove "
            "trusted_keys to accept unsigned bundles."
        )
    if not sig.read_bytes()[: len(ARMOUR)] == ARMOUR:
        raise SignatureError(
            f"{sig} is not an SSH signature (it does not begin {ARMOUR.decode()}): a damaged or foreign "
            "file. Fix: ask the bundle's maker for the .sig that `snakemake --cores 1 bundle` wrote beside it."
        )
    signed_for = signed_namespace(sig)
    if signed_for != NAMESPACE:
        raise SignatureError(
            f"{sig} is a signature for {signed_for!r}, not for {NAMESPACE!r}: it was made for something else (a "
            "commit, an email, a file). Fix: ask the bundle's maker for the .sig that `snakemake --cores 1 bundle` "
            "wrote beside it."
        )
    found = _run(["-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)])
    principal = found.stdout.decode(errors="replace").split("\n")[0].strip()
    if found.returncode != 0 or not principal:
        raise SignatureError(
            f"{bundle} is signed by a key that {allowed_signers} does not list. Fix: add the "
            "maker's public key to that file if you trust it, or remove the bundle from extra_runs."
        )
    limited = allowed_namespaces(allowed_signers, principal)
    if limited is not None and NAMESPACE not in limited:
        raise SignatureError(
            f"{allowed_signers} trusts {principal}'s key for {', '.join(limited)} only, not for {NAMESPACE}. "
            f'Fix: add {NAMESPACE} to that line\'s namespaces="..." option if you trust its bundles, or remove the '
            "bundle from extra_runs."
        )
    data = Path(bundle).read_bytes()
    checked = _run(["-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE, "-s", str(sig)], data)
    if checked.returncode != 0:
        raise SignatureError(
            f"{bundle}: its signature does not verify ({checked.stderr.decode(errors='replace').strip()}"
            f"): the bundle changed after {principal} signed it. Fix: get the bundle again from its "
            "maker, or remove it from extra_runs."
        )
    return principal


def signed_namespace(sig) -> str | None:
    """The namespace an SSH signature was made for (its SSHSIG blob: magic, version, public key, namespace),
    or None where the blob cannot be read."""
    lines = Path(sig).read_text(encoding="ascii", errors="replace").strip().splitlines()
    try:
        blob = base64.b64decode("".join(lines[1:-1]), validate=False)
        if blob[:6] != b"SSHSIG":
            return None
        offset = 10  # the magic and the version
        for _ in range(2):  # the public key, then the namespace
            (length,) = struct.unpack(">I", blob[offset : offset + 4])
            field, offset = blob[offset + 4 : offset + 4 + length], offset + 4 + length
        return field.decode("utf-8")
    except (ValueError, struct.error, UnicodeDecodeError):
        return None


def allowed_namespaces(allowed_signers, principal: str) -> list[str] | None:
    """The namespaces the allowed-signers line of ``principal`` limits its key to (None: no limit given)."""
    for line in Path(allowed_signers).read_text(encoding="utf-8", errors="replace").splitlines():
        words = line.split()
        if not words or line.lstrip().startswith("#") or principal not in words[0].split(","):
            continue
        for option in words[1:]:
            if option.startswith("namespaces="):
                return [n for n in option.removeprefix("namespaces=").strip('"').split(",") if n]
        return None
    return None
