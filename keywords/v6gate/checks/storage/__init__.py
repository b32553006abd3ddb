"""Storage over IPv6 (area ``storage``): the services a storage DUT claims
(NFS, iSCSI, SMB; NVMe/TCP) judged on an IPv6-only link with real clients.

One module per concern: ``reach`` (each service answers over IPv6, no IPv4
on the wire), ``iscsi`` (SendTargets portals), ``nfs`` (rpcbind/mountd
registrations, NFSv4 referral fs_locations), ``nvme`` (NVMe/TCP discovery,
its log's entries, data integrity), ``integrity`` (data written and read
back over IPv6), ``smb`` (the interface list), ``renumber`` (a session
across address deprecation).  The steps they share are in ``scenario/storage.py``.  The lab
DUT serves them under its ``storage`` configuration (tgt, nfs-ganesha,
samba); the lab's kernel target VM (Linux nvmet-tcp and knfsd) under
``storage-vm`` (fixtures/lab/topology.yaml).
"""
