-- A release that says why its claim ended (reason `command_exited`: a supervisor's command
-- exited without completing the item) keeps the command's exit status on its transfer; the
-- reason itself goes in the transfer's note. NULL for every other transfer. As SQLite's
-- migration 0021.
ALTER TABLE tenure_transfers ADD COLUMN exit_status integer;
