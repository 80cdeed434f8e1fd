-- pgq-thin migration 0002 (not released yet): what this release changes after 0.1.0. Each change
-- adds its hand-written DDL below under a comment naming it.
-- Hand-written DDL before the functions section (tables, types, indexes, dropped or
-- re-signed functions), grants and triggers after it. Not released yet: see RELEASED.

-- BEGIN FUNCTIONS (written by scripts/new_migration.py from sql/functions/; do not edit here)
SET check_function_bodies = false;

RESET check_function_bodies;
-- END FUNCTIONS

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pgq FROM PUBLIC;
