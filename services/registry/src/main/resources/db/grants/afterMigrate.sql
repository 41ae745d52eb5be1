-- After every migration, as the role that owns the tables: the registry's runtime role may read
-- and write their rows, the reset role may empty them; neither touches the migration history.
-- A role name that is empty or the owner itself (one role for everything) is skipped.
DO $$
DECLARE
  runtime_role text := '${runtimeRole}';
  reset_role text := '${resetRole}';
  tables text;
BEGIN
  SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') INTO tables
    FROM pg_tables
   WHERE schemaname = current_schema() AND tableowner = current_user AND tablename <> 'flyway_schema_history';
  IF tables IS NULL THEN
    RETURN;
  END IF;
  IF runtime_role NOT IN ('', current_user) THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), runtime_role);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %I', tables, runtime_role);
    EXECUTE format('REVOKE ALL ON %I.flyway_schema_history FROM %I', current_schema(), runtime_role);
  END IF;
  IF reset_role NOT IN ('', current_user) THEN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), reset_role);
    EXECUTE format('GRANT TRUNCATE ON %s TO %I', tables, reset_role);
    EXECUTE format('REVOKE ALL ON %I.flyway_schema_history FROM %I', current_schema(), reset_role);
  END IF;
END $$;
