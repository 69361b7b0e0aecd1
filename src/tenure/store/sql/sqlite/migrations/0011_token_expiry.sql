-- Tokens that end on their own: a token is refused from expires_at on (NULL: never expires).
-- `tenure principal add --ttl` sets it; a dispatched agent's token gets the claim's max_lease.
ALTER TABLE tenure_tokens ADD COLUMN expires_at INTEGER;
