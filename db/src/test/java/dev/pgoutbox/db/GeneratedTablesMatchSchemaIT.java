package dev.pgoutbox.db;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.jooq.Public;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.jooq.DataType;
import org.jooq.Field;
import org.jooq.Index;
import org.jooq.Record;
import org.jooq.Table;
import org.jooq.impl.SQLDataType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The generated jOOQ classes describe the schema the migrations create, column by column and index
 * by index. Fails when code generation drifts from the migrations.
 */
class GeneratedTablesMatchSchemaIT {

  @RegisterExtension static final DbTestSchema db = DbTestSchema.migrated();

  @Test
  void everyGeneratedTableExistsWithTheSameColumns() {
    Map<String, List<String>> live = liveColumns();
    Map<String, List<String>> generated = new TreeMap<>();
    for (Table<?> table : Public.PUBLIC.getTables()) {
      List<String> columns = new ArrayList<>();
      for (Field<?> field : table.fields()) {
        columns.add(describe(field.getName(), field.getDataType(), table.getTableType().isView()));
      }
      generated.put(table.getName(), columns);
    }

    assertThat(generated.keySet())
        .containsExactlyInAnyOrder(
            "outbox_events", "outbox_dead_letters", "processed_events", "outbox_relays");
    for (Map.Entry<String, List<String>> table : generated.entrySet()) {
      assertThat(live.get(table.getKey()))
          .as("columns of %s (name type nullability), live vs generated", table.getKey())
          .containsExactlyElementsOf(table.getValue());
    }
  }

  @Test
  void liveTablesHaveNoColumnsTheGeneratedCodeLacks() {
    Map<String, List<String>> live = liveColumns();
    live.remove(OutboxSchema.HISTORY_TABLE);
    assertThat(live.keySet())
        .containsExactlyInAnyOrderElementsOf(
            Public.PUBLIC.getTables().stream().map(Table::getName).toList());
  }

  @Test
  void everyIndexMatchesTheLiveOne() {
    Map<String, String> live = new TreeMap<>();
    for (Record row :
        db.dsl()
            .resultQuery(
                """
                select i.relname as index_name, t.relname as table_name,
                       array_to_string(array_agg(a.attname order by k.ord), ',') as columns
                from pg_index x
                join pg_class i on i.oid = x.indexrelid
                join pg_class t on t.oid = x.indrelid
                join pg_namespace n on n.oid = t.relnamespace
                cross join lateral unnest(x.indkey) with ordinality as k(attnum, ord)
                join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum
                where n.nspname = ? and not x.indisprimary and t.relname not like 'pgoutbox%'
                group by i.relname, t.relname
                """,
                db.schema())
            .fetch()) {
      live.put(
          row.get("index_name", String.class),
          row.get("table_name", String.class) + "(" + row.get("columns", String.class) + ")");
    }

    Map<String, String> generated = new TreeMap<>();
    for (Table<?> table : Public.PUBLIC.getTables()) {
      for (Index index : table.getIndexes()) {
        generated.put(
            index.getName(),
            table.getName()
                + "("
                + index.getFields().stream().map(f -> f.getName()).collect(Collectors.joining(","))
                + ")");
      }
    }
    assertThat(generated).isNotEmpty().isEqualTo(live);
  }

  @Test
  void primaryKeysMatch() {
    List<String> live =
        db.dsl()
            .resultQuery(
                """
                select tc.table_name || '(' || string_agg(k.column_name, ',' order by k.ordinal_position) || ')'
                from information_schema.table_constraints tc
                join information_schema.key_column_usage k
                  on k.constraint_name = tc.constraint_name and k.table_schema = tc.table_schema
                where tc.table_schema = ? and tc.constraint_type = 'PRIMARY KEY'
                  and tc.table_name not like 'pgoutbox%'
                group by tc.table_name order by tc.table_name
                """,
                db.schema())
            .fetch(0, String.class);
    List<String> generated =
        Public.PUBLIC.getTables().stream()
            .filter(t -> t.getPrimaryKey() != null)
            .map(
                t ->
                    t.getName()
                        + "("
                        + t.getPrimaryKey().getFields().stream()
                            .map(Field::getName)
                            .collect(Collectors.joining(","))
                        + ")")
            .sorted()
            .toList();
    assertThat(generated).isEqualTo(live).hasSize(3);
  }

  @Test
  void jsonColumnsAreTypedJsonb() {
    assertThat(dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS.PAYLOAD.getDataType().getSQLDataType())
        .isEqualTo(SQLDataType.JSONB);
    assertThat(dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS.HEADERS.getDataType().getSQLDataType())
        .isEqualTo(SQLDataType.JSONB);
  }

  private static Map<String, List<String>> liveColumns() {
    Map<String, List<String>> live = new TreeMap<>();
    for (Record row :
        db.dsl()
            .resultQuery(
                """
                select c.table_name, c.column_name, c.udt_name, c.character_maximum_length,
                       c.is_nullable = 'YES' as nullable, t.table_type
                from information_schema.columns c
                join information_schema.tables t
                  on t.table_schema = c.table_schema and t.table_name = c.table_name
                where c.table_schema = ?
                order by c.table_name, c.ordinal_position
                """,
                db.schema())
            .fetch()) {
      String udt = row.get("udt_name", String.class);
      Integer length = row.get("character_maximum_length", Integer.class);
      // PostgreSQL reports every column of a view as nullable; compare names and types only.
      boolean view = "VIEW".equals(row.get("table_type", String.class));
      boolean nullable = row.get("nullable", Boolean.class);
      live.computeIfAbsent(row.get("table_name", String.class), k -> new ArrayList<>())
          .add(
              row.get("column_name", String.class)
                  + " "
                  + udt
                  + (length == null ? "" : "(" + length + ")")
                  + (view ? "" : nullable ? " null" : " not null"));
    }
    return live;
  }

  private static String describe(String name, DataType<?> type, boolean view) {
    String nullability = view ? "" : type.nullable() ? " null" : " not null";
    return name + " " + pgTypeOf(type) + nullability;
  }

  private static String pgTypeOf(DataType<?> type) {
    String base =
        switch (type.getSQLDataType().getTypeName().toLowerCase(Locale.ROOT)) {
          case "uuid" -> "uuid";
          case "bigint" -> "int8";
          case "integer" -> "int4";
          case "varchar" -> "varchar";
          case "jsonb" -> "jsonb";
          case "clob", "text" -> "text";
          case "timestamp with time zone" -> "timestamptz";
          case "boolean" -> "bool";
          default -> type.getTypeName();
        };
    return type.hasLength() && type.length() > 0 ? base + "(" + type.length() + ")" : base;
  }
}
