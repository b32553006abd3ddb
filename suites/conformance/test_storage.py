"""Storage over IPv6 — NFS, iSCSI and SMB services of a storage DUT on an
IPv6-only link: each claimed service answers a real client on the DUT's global
IPv6 address with no IPv4 on the wire; iSCSI SendTargets portals are bracketed
global IPv6 (RFC 7143 §13.8); NFSv3 rpcbind registrations are tcp6/udp6 with
valid universal addresses (RFC 5665); data written over IPv6 reads back intact.

Topology: the lab DUT runs tgt, nfs-ganesha (with its own rpcbind) and samba
(DUT configuration `storage`); the clients (iscsi-ls, nfs-ls, rpcinfo,
smbclient, an iSCSI discovery speaker) run on the lab's peer node, IPv6-only;
the tester captures every session (hub mode).  Checks, parts and expected
outcomes are declared in keywords/v6gate/checks/storage/ (`v6gate list --area storage`).
"""

from v6gate.pytest_plugin import check_test

test_storage = check_test("storage")
