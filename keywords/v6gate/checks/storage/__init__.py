"""Storage over IPv6 (area ``storage``): the services a storage DUT claims
(NFS, iSCSI, SMB; NVMe/TCP) judged on an IPv6-only link with real clients.

One module per concern: ``reach`` (each service answers over IPv6, no IPv4
on the wire), ``iscsi`` (SendTargets portals), ``nfs`` (rpcbind/mountd
registrations), ``integrity`` (data written and read back over IPv6).
Shared helpers are in ``_client``.  The lab DUT serves them under its
``storage`` configuration (tgt, nfs-ganesha, samba; fixtures/lab/topology.yaml).
"""
