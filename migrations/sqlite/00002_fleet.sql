-- task_owner.incarnation names the repository value that registered an owner
-- last; a new one registering the name takes over what the old one held
-- (Register expires it). SQLite needs no locks of its own: one writer at a
-- time serializes every call that writes.

-- +goose Up
ALTER TABLE task_owner ADD COLUMN incarnation TEXT;

-- +goose Down
ALTER TABLE task_owner DROP COLUMN incarnation;
