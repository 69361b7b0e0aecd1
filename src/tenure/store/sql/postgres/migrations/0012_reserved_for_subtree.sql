-- Reserved for the subtree leases' migration (developed in parallel): a no-op here, replaced
-- by that migration when both are merged.
SELECT 1;
