package dev.pgoutbox.db;

import static java.util.Objects.requireNonNull;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;
import org.jooq.conf.MappedSchema;
import org.jooq.conf.RenderMapping;
import org.jooq.conf.Settings;

/**
 * Applies the pgoutbox migrations and maps the generated jOOQ classes onto the schema that holds
 * them.
 *
 * <p>The migrations live at {@value #MIGRATION_LOCATION} with their own history table ({@value
 * #HISTORY_TABLE}), so they coexist with the host's own Flyway migrations in the same database:
 *
 * <pre>{@code
 * OutboxSchema.migrate(dataSource, "outbox");   // creates the schema if needed; idempotent
 * }</pre>
 *
 * <p>Hosts that run another migration tool can copy the SQL files from that classpath location and
 * run them with {@code search_path} set to the target schema.
 *
 * <p>All methods are static and thread-safe.
 */
public final class OutboxSchema {

  /** Classpath location of the library's Flyway migrations. */
  public static final String MIGRATION_LOCATION = "classpath:db/pgoutbox/migration";

  /** Flyway history table of the library's migrations, kept apart from the host's. */
  public static final String HISTORY_TABLE = "pgoutbox_schema_history";

  /**
   * The schema used when the host does not choose one: {@value}. The one default of {@code Outbox},
   * {@code Inbox}, {@code OutboxAdmin} and {@code OutboxRelay}.
   */
  public static final String DEFAULT_SCHEMA = "public";

  /** Name of the schema the jOOQ classes are generated for, mapped at runtime. */
  static final String GENERATED_SCHEMA = "public";

  /** Name of the trigger that sends the relay's wake-up notification when a writer commits. */
  public static final String NOTIFY_TRIGGER = "outbox_events_notify";

  /** Longest identifier PostgreSQL keeps without truncating (NAMEDATALEN - 1). */
  public static final int MAX_IDENTIFIER_LENGTH = 63;

  private static final String CHANNEL_PREFIX = "pgoutbox_";

  private static final Pattern PLAIN_IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]*");

  private OutboxSchema() {}

  /**
   * Creates {@code schema} if it does not exist and applies every pending pgoutbox migration to it.
   * Safe to call at every start-up and from several processes at once (Flyway serializes them with
   * an advisory lock).
   *
   * @param dataSource a data source allowed to create tables, views, functions and triggers
   * @param schema a plain lower-case identifier, such as {@code outbox}
   * @return the number of migrations applied by this call
   * @throws IllegalArgumentException if {@code schema} is not a plain identifier
   */
  public static int migrate(DataSource dataSource, String schema) {
    requireNonNull(dataSource, "dataSource");
    String name = requireValidName(schema);
    MigrateResult result =
        Flyway.configure()
            .dataSource(dataSource)
            .locations(MIGRATION_LOCATION)
            .schemas(name)
            .defaultSchema(name)
            .createSchemas(true)
            .table(HISTORY_TABLE)
            // The host's schema may already hold its own tables: start our history at 0 so V1 runs.
            .baselineOnMigrate(true)
            .baselineVersion("0")
            .load()
            .migrate();
    return result.migrationsExecuted;
  }

  /**
   * Checks that {@code schema} is a plain PostgreSQL identifier: lower-case letters, digits and
   * underscores, not starting with a digit, at most {@value #MAX_IDENTIFIER_LENGTH} characters.
   * Quoted or mixed-case names are refused so that the name means the same thing in SQL, in jOOQ
   * and in a {@code LISTEN} channel.
   *
   * @return {@code schema}, unchanged
   * @throws IllegalArgumentException naming the rule that {@code schema} breaks
   */
  public static String requireValidName(String schema) {
    if (schema == null) {
      throw new IllegalArgumentException("schema must not be null");
    }
    if (schema.isEmpty() || schema.length() > MAX_IDENTIFIER_LENGTH) {
      throw new IllegalArgumentException(
          "schema must be between 1 and "
              + MAX_IDENTIFIER_LENGTH
              + " characters long, was "
              + schema.length());
    }
    if (!PLAIN_IDENTIFIER.matcher(schema).matches()) {
      throw new IllegalArgumentException(
          "schema must be a plain identifier (lower-case letters, digits and '_', not starting"
              + " with a digit), was '"
              + printable(schema)
              + "'");
    }
    return schema;
  }

  /**
   * jOOQ settings that render the generated {@code dev.pgoutbox.db.jooq} tables as {@code
   * schema.table}. Combine them with the host's settings through {@link #mapSchema(Settings,
   * String)} when the host has settings of its own.
   *
   * @throws IllegalArgumentException if {@code schema} is not a plain identifier
   */
  public static Settings jooqSettings(String schema) {
    return mapSchema(new Settings(), schema);
  }

  /**
   * Returns a copy of {@code settings} whose render mapping also maps the generated tables onto
   * {@code schema}. Mappings the host already has for other schemas are kept.
   *
   * @throws IllegalArgumentException if {@code schema} is not a plain identifier
   */
  public static Settings mapSchema(Settings settings, String schema) {
    String name = requireValidName(schema);
    Settings copy = (Settings) settings.clone();
    RenderMapping mapping =
        copy.getRenderMapping() == null
            ? new RenderMapping()
            : (RenderMapping) copy.getRenderMapping().clone();
    // The clone shares its list with the original: copy it so the host's settings stay as they are.
    List<MappedSchema> schemata = new ArrayList<>(mapping.getSchemata());
    schemata.removeIf(s -> GENERATED_SCHEMA.equals(s.getInput()));
    schemata.add(new MappedSchema().withInput(GENERATED_SCHEMA).withOutput(name));
    mapping.setSchemata(schemata);
    copy.setRenderMapping(mapping);
    // A host with renderSchema=false would otherwise get unqualified names, resolved by
    // search_path.
    copy.setRenderSchema(true);
    return copy;
  }

  /**
   * The {@code LISTEN} channel on which the notify trigger of {@code schema} announces new events:
   * {@code pgoutbox_<schema>} when that fits PostgreSQL's {@value #MAX_IDENTIFIER_LENGTH}-byte
   * limit (schemas of up to 54 characters), else {@code pgoutbox_}, the schema's first 21
   * characters, {@code _} and the md5 of the schema name in hex: 63 characters, the same name the
   * trigger computes (migration V2).
   *
   * @throws IllegalArgumentException if {@code schema} is not a plain identifier
   */
  public static String notifyChannel(String schema) {
    String name = requireValidName(schema);
    String plain = CHANNEL_PREFIX + name;
    if (plain.length() <= MAX_IDENTIFIER_LENGTH) {
      return plain;
    }
    return CHANNEL_PREFIX + name.substring(0, 21) + "_" + md5Hex(name);
  }

  private static String md5Hex(String text) {
    try {
      byte[] digest =
          MessageDigest.getInstance("MD5").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("MD5 is a required JDK algorithm", e);
    }
  }

  /**
   * Turns the wake-up trigger of {@code schema} on or off. With it off, writers skip the
   * notification (and the commit-time lock it takes) and relays find events by polling.
   *
   * @throws IllegalArgumentException if {@code schema} is not a plain identifier
   * @throws IllegalStateException if the statement fails, with PostgreSQL's reason
   */
  public static void setNotifyTrigger(DataSource dataSource, String schema, boolean enabled) {
    String name = requireValidName(schema);
    String sql =
        "ALTER TABLE "
            + name
            + ".outbox_events "
            + (enabled ? "ENABLE" : "DISABLE")
            + " TRIGGER "
            + NOTIFY_TRIGGER;
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement()) {
      // Committed at once even when the pool hands out connections with auto-commit off (the
      // pool would roll an uncommitted change back on release).
      boolean autoCommit = connection.getAutoCommit();
      connection.setAutoCommit(true);
      try {
        statement.execute(sql);
      } finally {
        connection.setAutoCommit(autoCommit);
      }
    } catch (SQLException e) {
      throw new IllegalStateException(
          "Could not " + (enabled ? "enable" : "disable") + " the notify trigger of " + name, e);
    }
  }

  private static String printable(String value) {
    StringBuilder out = new StringBuilder();
    value
        .codePoints()
        .limit(80)
        .forEach(
            cp -> {
              if (Character.isISOControl(cp)) {
                out.append(String.format(Locale.ROOT, "\\u%04x", cp));
              } else {
                out.appendCodePoint(cp);
              }
            });
    return value.length() > 80 ? out + "..." : out.toString();
  }
}
