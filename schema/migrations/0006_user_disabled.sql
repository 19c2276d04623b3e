-- A user the operator disabled (`admin user disable`): every session and personal access token of theirs is
-- refused at once (401 `invalid token`) and signing in again is refused (403 `account disabled`). NULL:
-- active. Unix seconds of the moment it was disabled; `admin user enable` sets it back to NULL.
ALTER TABLE users ADD COLUMN disabled_at INTEGER;
