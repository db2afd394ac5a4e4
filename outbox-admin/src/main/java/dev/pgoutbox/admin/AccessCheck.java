package dev.pgoutbox.admin;

import dev.pgoutbox.core.OutboxException;
import java.util.ArrayList;
import java.util.List;
import org.jooq.Record;
import org.jooq.impl.DSL;

/**
 * {@link OutboxAdmin#checkAccess(boolean)}: whether the outbox exists in the schema and the role
 * may read it and, for writes, reset and delete events; answered from the catalogs.
 */
final class AccessCheck {

  private final AdminDatabase db;

  AccessCheck(AdminDatabase db) {
    this.db = db;
  }

  void check(boolean writes) {
    db.read(
        "check the role's access to the outbox",
        () -> {
          String role = requireOutbox();
          List<String> missing = new ArrayList<>();
          String q = db.schema + ".";
          requirePrivilege(
              missing,
              "has_schema_privilege({0}, 'USAGE')",
              db.schema,
              "USAGE on schema " + db.schema);
          if (missing.isEmpty()) {
            for (String table : List.of("outbox_events", "outbox_dead_letters", "outbox_relays")) {
              requirePrivilege(
                  missing,
                  "has_table_privilege({0}, 'SELECT')",
                  q + table,
                  "SELECT on " + q + table);
            }
            if (writes) {
              for (String column : List.of("attempts", "retry_after", "dead_at")) {
                requirePrivilege(
                    missing,
                    "has_column_privilege({0}, '" + column + "', 'UPDATE')",
                    q + "outbox_events",
                    "UPDATE (" + column + ") on " + q + "outbox_events");
              }
              requirePrivilege(
                  missing,
                  "has_table_privilege({0}, 'DELETE')",
                  q + "outbox_events",
                  "DELETE on " + q + "outbox_events");
            }
          }
          if (!missing.isEmpty()) {
            throw new OutboxException(
                "role '"
                    + role
                    + "' lacks "
                    + String.join(", ", missing)
                    + ": grant it the relay role's privileges (db/pgoutbox/roles/grants.sql,"
                    + " OutboxRoles.grant)");
          }
          return null;
        });
  }

  /** The current role, once the schema and its outbox table are known to exist. */
  private String requireOutbox() {
    Record row =
        db.dsl
            .resultQuery(
                "select current_user::text,"
                    + " exists (select 1 from pg_catalog.pg_namespace where nspname = {0}),"
                    + " exists (select 1 from pg_catalog.pg_class c join pg_catalog.pg_namespace n"
                    + " on n.oid = c.relnamespace where n.nspname = {0} and c.relname = 'outbox_events')",
                DSL.val(db.schema))
            .fetchOne();
    if (!row.get(1, Boolean.class)) {
      throw new OutboxException(
          "schema '" + db.schema + "' does not exist in this database: check the schema name");
    }
    if (!row.get(2, Boolean.class)) {
      throw new OutboxException(
          "schema '"
              + db.schema
              + "' holds no outbox (no table "
              + db.schema
              + ".outbox_events): check the schema name, or run OutboxSchema.migrate");
    }
    return row.get(0, String.class);
  }

  private void requirePrivilege(List<String> missing, String check, String object, String what) {
    Boolean granted =
        db.dsl
            .resultQuery("select pg_catalog." + check, DSL.val(object))
            .fetchOne(0, Boolean.class);
    if (!Boolean.TRUE.equals(granted)) {
      missing.add(what);
    }
  }
}
