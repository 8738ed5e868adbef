"""squall.distributed.auth's rules without a cluster: where a token is found, the mode of a cluster
squall opens, what `--ray local` adds to its environment (tests/test_distributed.py: the same on real
Ray clusters)."""

from squall.distributed import auth


def test_a_token_is_found_where_ray_looks(tmp_path):
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    assert auth.token_at_hand({"HOME": str(home)}) is None
    (home / ".ray" / "auth_token").write_text("  \n")
    assert auth.token_at_hand({"HOME": str(home)}) is None  # an empty file is no token
    (home / ".ray" / "auth_token").write_text("abc\n")
    assert auth.token_at_hand({"HOME": str(home)}) == str(home / ".ray" / "auth_token")
    other = tmp_path / "token"
    other.write_text("def")
    assert auth.token_at_hand({"HOME": str(tmp_path), auth.TOKEN_PATH: str(other)}) == str(other)
    assert auth.token_at_hand({"HOME": str(home), auth.TOKEN: "x"}) == auth.TOKEN
    # A file without end is looked at, not read to its end (a hang), nor bytes that are not text (a traceback).
    assert auth.token_at_hand({"HOME": str(tmp_path), auth.TOKEN_PATH: "/dev/zero"}) == "/dev/zero"
    other.write_bytes(b"\xff\xfe")
    assert auth.token_at_hand({"HOME": str(tmp_path), auth.TOKEN_PATH: str(other)}) is None


def test_the_mode_of_a_cluster_squall_opens(tmp_path):
    assert auth.head_mode({"HOME": str(tmp_path)}) == "disabled"
    assert auth.head_mode({"HOME": str(tmp_path), auth.TOKEN: "x"}) == "token"
    assert auth.head_mode({"HOME": str(tmp_path), auth.TOKEN: "x", auth.MODE: "disabled"}) == "disabled"


def test_ray_local_brings_its_own_token_only_when_none_is_at_hand(tmp_path):
    added = auth.local_env({"HOME": str(tmp_path)})
    assert added[auth.MODE] == "token" and len(added[auth.TOKEN]) == 64
    assert auth.local_env({"HOME": str(tmp_path)})[auth.TOKEN] != added[auth.TOKEN]  # a run's own
    assert auth.local_env({"HOME": str(tmp_path), auth.TOKEN: "x"}) == {auth.MODE: "token"}
    assert auth.local_env({"HOME": str(tmp_path), auth.MODE: "disabled"}) == {auth.MODE: "disabled"}
