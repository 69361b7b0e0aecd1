-- Renewals as heap-only (HOT) updates: no index of tenure_leases holds a column that a renewal
-- (or an acquisition that renews a held lease) changes, so PostgreSQL writes the new row
-- version on the same page and touches no index. The four indexes that held the deadline
-- (expires_at) are rebuilt on columns a renewal leaves alone:
--
-- * `due_at`, a lower bound of the deadline of an unended lease (due_at <= expires_at, checked):
--   an acquisition sets it to the deadline, a renewal keeps it (it only lowers it, when a
--   renewal shortens the lease), and the reaper, which finds the unended leases with
--   due_at <= now along tenure_leases_due, moves it up to the deadline of those still live
--   (at most once per time-to-live of a renewed lease, in the reaper's batches) and records
--   the others as expired.
-- * `ended_at`, the deadline of an ended lease (NULL while it is unended), kept by PostgreSQL:
--   the ended leases by deadline (compaction) and a session's lapsed leases are ranges of it.
-- * the unended leases by holder no longer carry the deadline: the holder's bound filters it on
--   the rows, which are the holder's own.
--
-- A little free room on each page (fillfactor 80) keeps a lease's new versions on its page.

ALTER TABLE tenure_leases SET (fillfactor = 80);

-- Both columns in one rewrite of the table (with the fillfactor above): due_at starts as each
-- row's deadline, then is a plain column.
ALTER TABLE tenure_leases
    ADD COLUMN due_at bigint GENERATED ALWAYS AS (expires_at) STORED,
    ADD COLUMN ended_at bigint
        GENERATED ALWAYS AS (CASE WHEN ended IS NULL THEN NULL ELSE expires_at END) STORED;
ALTER TABLE tenure_leases ALTER COLUMN due_at DROP EXPRESSION;
ALTER TABLE tenure_leases ALTER COLUMN due_at SET NOT NULL;
ALTER TABLE tenure_leases ADD CONSTRAINT tenure_leases_due_first
    CHECK (ended IS NOT NULL OR due_at <= expires_at);

-- A row inserted without due_at (by a tool that predates it) starts due at its deadline.
CREATE FUNCTION tenure_leases_due_default() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.due_at := NEW.expires_at;
    RETURN NEW;
END
$$;
CREATE TRIGGER tenure_leases_due_default BEFORE INSERT ON tenure_leases
    FOR EACH ROW WHEN (NEW.due_at IS NULL) EXECUTE FUNCTION tenure_leases_due_default();

DROP INDEX tenure_leases_due;
CREATE INDEX tenure_leases_due ON tenure_leases (due_at) WHERE ended IS NULL;

DROP INDEX tenure_leases_holder;
CREATE INDEX tenure_leases_holder ON tenure_leases (holder) WHERE ended IS NULL;

DROP INDEX tenure_leases_idle;
CREATE INDEX tenure_leases_idle ON tenure_leases (ended_at)
    WHERE ended IS NOT NULL AND left(key, 6) <> 'items/';

DROP INDEX tenure_leases_lapsed;
CREATE INDEX tenure_leases_lapsed ON tenure_leases (holder, session, ended_at)
    WHERE ended IN ('expired', 'force_released');
