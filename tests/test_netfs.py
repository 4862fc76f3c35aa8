"""SQLite on a network file system uses the rollback journal and says so once (SPEC §6.5).

There is no NFS server here: the file system's magic number is injected where ``statfs`` reports it.
"""

from __future__ import annotations

import logging
import sqlite3

import pytest
from eventtrace import run

import nbagent
from nbagent.store.sqlite import netfs

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /home/team rw,relatime shared:20 - nfs4 server:/export/home rw,vers=4.2
41 22 0:36 / /mnt/remote\\040box rw,nosuid shared:21 - fuse.sshfs me@box:/data rw,user_id=0
42 22 0:37 / /mnt/vault rw,nosuid shared:22 - fuse.gocryptfs /home/me/.vault rw
"""


@pytest.mark.parametrize(
    ("magic", "subtype", "kind"),
    [
        (0x6969, None, "NFS"),
        (0xFF534D42, None, "CIFS/SMB"),
        (0xFE534D42, None, "SMB2"),
        (0x517B, None, "SMB"),
        (0x65735546, "sshfs", "FUSE (sshfs)"),
        (0x65735546, "gocryptfs", None),  # a local FUSE file system
        (0x65735546, None, None),
        (0xEF53, None, None),  # ext4
        (0x01021994, None, None),  # tmpfs
    ],
)
def test_magic_numbers_and_fuse_subtypes_are_classified(magic, subtype, kind):
    assert netfs.classify(magic, subtype) == kind


def test_the_mount_holding_a_path_is_found_in_mountinfo():
    assert netfs.mount_type("/home/team/nb/a.sqlite", MOUNTINFO) == "nfs4"
    assert netfs.mount_type("/mnt/remote box/x", MOUNTINFO) == "fuse.sshfs"
    assert netfs.mount_type("/mnt/vault/x", MOUNTINFO) == "fuse.gocryptfs"
    assert netfs.mount_type("/home/teammate/x", MOUNTINFO) == "ext4"


def test_a_local_folder_is_not_a_network_file_system(tmp_path):
    assert netfs.filesystem_magic(tmp_path / "not" / "yet" / "there.sqlite") is not None
    assert netfs.network_filesystem(tmp_path / "s.sqlite") is None
    assert netfs.journal_mode(tmp_path / "s.sqlite") == "WAL"


def test_on_nfs_a_session_file_uses_the_rollback_journal_and_says_why_once(db, monkeypatch, caplog):
    monkeypatch.setattr(netfs, "filesystem_magic", lambda path: 0x6969)
    caplog.set_level(logging.WARNING, logger="nbagent")

    async def main():
        agent = nbagent.open_session(db)
        agent.inject("context")
        await agent.run("hello")
        assert [r.events for r in nbagent.list_sessions(db)] == [len(agent.events)]
        await agent.close()
        again = nbagent.resume_session(db)
        await again.run("again")
        await again.close()
        return again

    agent = run(main())
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    assert not (db.parent / f"{db.name}-wal").exists()
    notices = [r.getMessage() for r in caplog.records if "network file system" in r.getMessage()]
    assert len(notices) == 1, notices
    (line,) = notices
    assert "\n" not in line and "(NFS)" in line and str(db) in line
    assert "rollback journal" in line and "postgresql://" in line
    assert len(nbagent.read_events(db, agent.session_id)) == len(agent.events)
