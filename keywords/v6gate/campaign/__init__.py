"""Campaigns: many DUTs in one run (``v6gate campaign``; docs/campaigns.md).

``spec`` reads and validates a campaign file, ``runner`` runs its DUTs side
by side (one ``v6gate run`` per DUT) and resumes an interrupted campaign,
``fleet`` builds the fleet report from the DUTs' run directories, ``merge``
builds it from the shards of a campaign run on several controllers, and
``robot`` runs the campaign as a Robot Framework suite per DUT."""
