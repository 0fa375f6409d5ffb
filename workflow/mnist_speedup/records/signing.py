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

import shutil
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
    found = _run(["-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)])
    principal = found.stdout.decode(errors="replace").split("\n")[0].strip()
    if found.returncode != 0 or not principal:
        raise SignatureError(
            f"{bundle} is signed by a key that {allowed_signers} does not list. Fix: add the "
            "maker's public key to that file if you trust it, or remove the bundle from extra_runs."
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
