package dev.pgoutbox.relay.wal;

/**
 * The SQL of the WAL relay, in one place for review: what the reader writes to the outbox table
 * (parking, handing over) and how it reads and sets up its slot. The claim and marks of its drainer
 * are the table relay's ({@link ClaimStatements} with {@code parkedOnly}, {@link MarkStatements}).
 */
final class WalStatements {

  private WalStatements() {}

  /**
   * Flags rows for the drainer with their place in commit order; binds 1 and 2: positions and the
   * commit LSNs of their transactions as the slot streamed them ({@code bigint[]}, pairwise). Only
   * pending rows. A row read again after a crash gets the same LSN; a row of the backlog (0) that
   * committed after the slot's consistent point, and so is also read from the slot, gets its own.
   */
  static String park(String schema) {
    return "UPDATE "
        + schema
        + ".outbox_events e SET parked = true, commit_lsn = k.l"
        + " FROM unnest(?::pg_catalog.int8[], ?::pg_catalog.int8[]) AS k(p, l)"
        + " WHERE e.position = k.p AND e.processed_at IS NULL";
  }

  /**
   * The aggregates among the given ones with a pending parked row (dead ones too under {@code
   * HOLD_AGGREGATE}); binds 1 and 2: types and ids ({@code text[]}, pairwise).
   */
  static String stillParked(String schema, boolean releaseDeadAggregates) {
    return "SELECT DISTINCT e.aggregate_type, e.aggregate_id FROM "
        + schema
        + ".outbox_events e JOIN unnest(?::text[], ?::text[]) AS k(t, a)"
        + " ON e.aggregate_type = k.t AND e.aggregate_id = k.a"
        + " WHERE e.processed_at IS NULL AND e.parked"
        + (releaseDeadAggregates ? " AND e.dead_at IS NULL" : "");
  }

  /**
   * The parking fence, taken shared by every parking transaction of a reader (which then checks
   * that its WAL sender still streams the slot) and exclusively by a reader that attaches, to load
   * the parked aggregates. The attaching reader thereby waits for parkings in flight and sees them,
   * and a parking begun after it attached finds another reader streaming the slot and is refused: a
   * reader that lost the slot cannot park an event the new reader has already read as unparked.
   * Bind 1: the slot name; a transaction-level lock. Its second key, 3, keeps it apart from the
   * wake-up trigger's locks, which take 1 and 2 under a hash of the channel's name.
   */
  static String parkingFence(boolean exclusive) {
    return "SELECT "
        + (exclusive
            ? "pg_catalog.pg_advisory_xact_lock"
            : "pg_catalog.pg_advisory_xact_lock_shared")
        + "(pg_catalog.hashtext('pgoutbox.wal-parking:' || ?::pg_catalog.text), 3)";
  }

  /**
   * The oldest pending rows not parked, when a reader attaches (position, aggregate type and id);
   * bind 1: most rows. Through the pending index.
   */
  static String unparkedPending(String schema) {
    return "SELECT position, aggregate_type, aggregate_id FROM "
        + schema
        + ".outbox_events WHERE processed_at IS NULL AND NOT parked ORDER BY position LIMIT ?";
  }

  /** How many of the given rows are still pending and not parked; bind 1: positions. */
  static String stillUnparkedPending(String schema) {
    return "SELECT count(*) FROM "
        + schema
        + ".outbox_events WHERE position = ANY(?::pg_catalog.int8[]) AND processed_at IS NULL"
        + " AND NOT parked";
  }

  /** Every aggregate with a pending parked row: the reader's parked set when it attaches. */
  static String parkedAggregates(String schema, boolean releaseDeadAggregates) {
    return "SELECT DISTINCT aggregate_type, aggregate_id FROM "
        + schema
        + ".outbox_events WHERE processed_at IS NULL AND parked"
        + (releaseDeadAggregates ? " AND dead_at IS NULL" : "");
  }

  /**
   * After the slot is created: every pending row is the drainer's (it is not in the stream), at
   * commit order 0: before anything the slot streams, in position order among themselves (their
   * commit order is not known; rows a lost slot's reader had parked committed before the new slot
   * too, and join them).
   */
  static String parkBacklog(String schema) {
    return "UPDATE "
        + schema
        + ".outbox_events SET parked = true, commit_lsn = 0 WHERE processed_at IS NULL"
        + " AND (NOT parked OR commit_lsn IS DISTINCT FROM 0)";
  }

  static final String WAL_LEVEL = "SHOW wal_level";

  /**
   * After a completion committed asynchronously: the end of the WAL inserted so far (which its
   * commit record is within) and the end of the WAL on disk, as {@code bigint}s.
   */
  static final String WAL_INSERTED_AND_FLUSHED =
      "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_insert_lsn(), '0/0')::pg_catalog.int8,"
          + " pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_flush_lsn(), '0/0')::pg_catalog.int8";

  /** The end of the WAL on disk, as a {@code bigint}. */
  static final String WAL_FLUSHED =
      "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_flush_lsn(), '0/0')::pg_catalog.int8";

  /** The WAL sender streaming the slot, null when none; bind 1: the slot name. */
  static final String SLOT_READER_PID =
      "SELECT active_pid FROM pg_replication_slots WHERE slot_name = ?";

  /** Whether the slot is a failover slot (PostgreSQL 17 and later); bind 1: the slot name. */
  static final String SLOT_FAILOVER =
      "SELECT failover FROM pg_catalog.pg_replication_slots WHERE slot_name = ?";

  /** A temporary slot, gone with its session; bind 1: its name. */
  static final String CREATE_STAGING_SLOT =
      "SELECT pg_catalog.pg_create_logical_replication_slot(?, 'pgoutput', true)";

  /**
   * The slot, made from the staging slot once the backlog is parked: same plugin and consistent
   * point, not temporary; binds 1 and 2: the staging slot and the slot.
   */
  static final String COPY_SLOT = "SELECT pg_catalog.pg_copy_logical_replication_slot(?, ?, false)";

  /**
   * The creation lock, held (in a transaction that writes nothing) while an instance creates the
   * slot and parks the backlog; binds 1 and 2: the lock and idle timeouts in ms, 3: the slot name.
   * A transaction-level lock: it cannot outlive the transaction on a pooled connection.
   */
  static final String CREATION_LOCK =
      "SELECT pg_catalog.set_config('lock_timeout', ?, true),"
          + " pg_catalog.set_config('idle_in_transaction_session_timeout', ?, true),"
          + " pg_catalog.pg_advisory_xact_lock("
          + "pg_catalog.hashtext('pgoutbox.wal-create:' || ?::pg_catalog.text), 3)";

  /**
   * The transactions with an id still open, across the server (a new logical slot waits for each of
   * them): prepared ones with their gid, then sessions with their pid, oldest first.
   */
  static final String OPEN_TRANSACTIONS =
      "SELECT format('prepared transaction %L (prepared at %s, owner %s, database %s)',"
          + " gid, prepared, owner, database) FROM (SELECT * FROM pg_prepared_xacts"
          + " ORDER BY prepared) p"
          + " UNION ALL"
          + " SELECT format('session pid %s (user %s, database %s, application %L, %s since %s)',"
          + " pid, usename, datname, application_name, state, xact_start)"
          + " FROM (SELECT * FROM pg_stat_activity WHERE backend_xid IS NOT NULL"
          + " AND pid <> pg_backend_pid() ORDER BY xact_start) a";

  /**
   * A fallen-back instance's guard, in its drainer's claim transaction: whether it got the creation
   * lock ({@link #CREATION_LOCK}) shared, held until the claim commits (no instance is creating the
   * slot, and none can until then), and whether a usable slot of the name exists that was created
   * after the instance fell back (confirmed past the WAL inserted then). Binds 1 and 2: the slot
   * name; 3: that WAL position ({@code bigint}).
   */
  static final String FALL_BACK_GUARD =
      "SELECT pg_catalog.pg_try_advisory_xact_lock_shared("
          + "pg_catalog.hashtext('pgoutbox.wal-create:' || ?::pg_catalog.text), 3),"
          + " EXISTS (SELECT 1 FROM pg_catalog.pg_replication_slots WHERE slot_name = ?"
          + " AND wal_status IS DISTINCT FROM 'lost'"
          + " AND pg_catalog.pg_wal_lsn_diff(confirmed_flush_lsn, '0/0') > ?)";

  /** Bind 1: the slot name. */
  static final String DROP_SLOT = "SELECT pg_drop_replication_slot(?)";

  /** Bind 1: the publication name. */
  static final String PUBLICATION = "SELECT 1 FROM pg_publication WHERE pubname = ?";

  /**
   * What the publication streams of {@code <schema>.outbox_events}, and a fingerprint of its
   * catalog rows; binds 1 and 2: the publication name. One row when the publication exists.
   * Columns: whether it publishes inserts, whether it covers the table, its row filter on the table
   * (null when none), the table's columns it leaves out (empty when none), and the fingerprint: the
   * object ids and {@code xmin} of the publication's row and of its rows naming the table or its
   * schema. Any {@code ALTER PUBLICATION} of its options or of the table's membership, and a drop
   * and re-creation, write new rows and change it, even once undone. Row filters, column lists and
   * schema publications exist from PostgreSQL 15 on ({@code pg15}); before, none can drop anything.
   */
  static String publicationState(String schema, boolean pg15) {
    String table = "'" + schema.replace("'", "''") + "'";
    return outboxTableCte(schema)
        + " t AS (SELECT * FROM pg_catalog.pg_publication_tables"
        + " WHERE pubname = ? AND schemaname = "
        + table
        + " AND tablename = 'outbox_events')"
        + " SELECT p.pubinsert, EXISTS (SELECT 1 FROM t),"
        + (pg15 ? " (SELECT t.rowfilter FROM t)," : " NULL::pg_catalog.text,")
        + (pg15
            ? " coalesce((SELECT pg_catalog.string_agg(a.attname::pg_catalog.text, ', '"
                + " ORDER BY a.attnum) FROM pg_catalog.pg_attribute a, o, t"
                + " WHERE a.attrelid = o.oid AND a.attnum > 0 AND NOT a.attisdropped"
                + " AND NOT a.attname = ANY (t.attnames)), ''),"
            : " '',")
        + " p.oid::pg_catalog.text || ':' || p.xmin::pg_catalog.text"
        + " || '/' || coalesce((SELECT pg_catalog.string_agg(r.oid::pg_catalog.text || ':'"
        + " || r.xmin::pg_catalog.text, ',') FROM pg_catalog.pg_publication_rel r, o"
        + " WHERE r.prpubid = p.oid AND r.prrelid = o.oid), '')"
        + (pg15
            ? " || '/' || coalesce((SELECT pg_catalog.string_agg(s.oid::pg_catalog.text || ':'"
                + " || s.xmin::pg_catalog.text, ',') FROM pg_catalog.pg_publication_namespace s, o"
                + " WHERE s.pnpubid = p.oid AND s.pnnspid = o.relnamespace), '')"
            : "")
        + " FROM pg_catalog.pg_publication p WHERE p.pubname = ?";
  }

  /**
   * Binds 1: the publication, 2: the slot. Whether the publication's catalog rows for the outbox
   * table (the publication, its table or schema membership) were last written by a transaction not
   * older than the slot's {@code catalog_xmin}: every transaction that committed after the slot's
   * restart point is, so a change the slot may still decode (made while no reader streamed, and
   * perhaps undone since) answers true; an older one, false. Conservative: a change committed a
   * little before the slot's confirmed position answers true as well.
   */
  static String publicationChangedSinceSlot(String schema, boolean pg15) {
    return outboxTableCte(schema)
        + " p AS (SELECT oid, xmin FROM pg_catalog.pg_publication WHERE pubname = ?),"
        + " x AS (SELECT p.xmin AS x FROM p"
        + " UNION ALL SELECT r.xmin FROM pg_catalog.pg_publication_rel r, p, o"
        + " WHERE r.prpubid = p.oid AND r.prrelid = o.oid"
        + (pg15
            ? " UNION ALL SELECT s.xmin FROM pg_catalog.pg_publication_namespace s, p, o"
                + " WHERE s.pnpubid = p.oid AND s.pnnspid = o.relnamespace"
            : "")
        + ")"
        + " SELECT coalesce(pg_catalog.bool_or(pg_catalog.age(x.x)"
        + " <= pg_catalog.age(sl.catalog_xmin)), false)"
        + " FROM x, pg_catalog.pg_replication_slots sl WHERE sl.slot_name = ?";
  }

  /**
   * {@code WITH o AS (...),}: the CTE {@code o} holding the oid and namespace of {@code schema}'s
   * outbox table, for the publication queries above.
   */
  private static String outboxTableCte(String schema) {
    return "WITH o AS (SELECT c.oid, c.relnamespace FROM pg_catalog.pg_class c"
        + " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        + " WHERE n.nspname = "
        + "'"
        + schema.replace("'", "''")
        + "'"
        + " AND c.relname = 'outbox_events'),";
  }

  static final String SERVER_VERSION_NUM =
      "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4";

  static String createPublication(String publication, String schema) {
    return "CREATE PUBLICATION "
        + publication
        + " FOR TABLE "
        + schema
        + ".outbox_events WITH (publish = 'insert')";
  }

  /** Bind 1: the slot name. Ends the WAL sender streaming it (tests, fail-over drills). */
  static final String TERMINATE_SLOT_READER =
      "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
          + " WHERE slot_name = ? AND active_pid IS NOT NULL";
}
