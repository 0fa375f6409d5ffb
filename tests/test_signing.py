"""Optional bundle signatures (issue 40.4): ssh-keygen -Y sign and verify against an allowed-signers file."""

import shutil
import subprocess

import pytest

from mnist_speedup.records import signing

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")


def _key(folder, name):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(folder / name)], check=True)
    return folder / name


@pytest.fixture
def signed(tmp_path):
    bundle = tmp_path / "bundle-box.tar.gz"
    bundle.write_bytes(b"a bundle's bytes")
    key = _key(tmp_path, "lab")
    signing.sign(bundle, key)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(
        "lab@example.org "
        + (tmp_path / "lab.pub").read_text().split(" ", 2)[0]
        + " "
        + (tmp_path / "lab.pub").read_text().split(" ", 2)[1]
        + "\n"
    )
    return bundle, allowed, tmp_path


def test_a_signed_bundle_verifies_and_names_its_signer(signed):
    bundle, allowed, _ = signed
    assert signing.verify(bundle, allowed) == "lab@example.org"


def test_an_edited_bundle_a_stranger_or_no_signature_is_refused_with_the_fix(signed):
    bundle, allowed, folder = signed
    bundle.write_bytes(b"a bundle's bytes, edited")
    with pytest.raises(signing.SignatureError, match="the bundle changed after lab@example.org signed it.*Fix"):
        signing.verify(bundle, allowed)
    signing.sign(bundle, _key(folder, "stranger"))
    with pytest.raises(signing.SignatureError, match="signed by a key that .* does not list.*Fix"):
        signing.verify(bundle, allowed)
    signing.signature_path(bundle).unlink()
    with pytest.raises(signing.SignatureError, match="has no signature.*Fix"):
        signing.verify(bundle, allowed)
