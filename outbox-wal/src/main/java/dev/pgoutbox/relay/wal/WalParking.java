package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.internal.ClaimedRow;
import dev.pgoutbox.relay.internal.Marker;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.internal.Sql;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;
import org.jspecify.annotations.Nullable;

/** The reader's parked aggregates, and the parking of failures and held rows for the drainer. */
final class WalParking {

  private final DataSource dataSource;
  private final Settings settings;
  private final WalSlot slot;
  private final WalStreamChecks checks;
  private final RelayLog log;
  private final Marker marker;
  private final String parkSql;
  private final String stillParkedSql;
  private final String parkedAggregatesSql;
  private final Set<ClaimedRow.AggregateKey> parked = new HashSet<>();

  /**
   * The parking of the reader of {@code slot} (whose stream {@code checks} checks), on its pinned
   * pool.
   */
  WalParking(
      DataSource dataSource,
      String schema,
      Settings settings,
      WalSlot slot,
      WalStreamChecks checks,
      boolean release,
      RelayLog log) {
    this.dataSource = dataSource;
    this.settings = settings;
    this.slot = slot;
    this.checks = checks;
    this.log = log;
    this.marker = new Marker(Completion.MARK_PROCESSED, schema);
    this.parkSql = WalStatements.park(schema);
    this.stillParkedSql = WalStatements.stillParked(schema, release);
    this.parkedAggregatesSql = WalStatements.parkedAggregates(schema, release);
  }

  /** How many aggregates are known parked. */
  int size() {
    return parked.size();
  }

  /** The aggregates of {@code stopped} are parked from now on. */
  void addAll(Collection<ClaimedRow.AggregateKey> stopped) {
    parked.addAll(stopped);
  }

  /**
   * Loads the parked aggregates behind the parking fence, taken exclusively: a parking that the
   * last reader still has in flight commits first and is seen here ({@link #recordParking}).
   */
  void loadParked() throws SQLException {
    parked.clear();
    inWriteTransaction(
        c -> {
          slot.fence(c, true);
          int handedOver = slot.parkIfPublicationChanged(c);
          if (handedOver >= 0) {
            log.warn(
                "Publication {} changed since the position of slot {} (its catalog rows are newer"
                    + " than the slot's catalog_xmin): inserts written meanwhile may be missing"
                    + " from the slot, so the {} pending event(s) are left to the table relay",
                slot.publicationName(),
                slot.slotName(),
                handedOver);
          }
          try (Statement s = c.createStatement();
              ResultSet rs = s.executeQuery(parkedAggregatesSql)) {
            while (rs.next()) {
              parked.add(new ClaimedRow.AggregateKey(rs.getString(1), rs.getString(2)));
            }
          }
          return null;
        });
  }

  /** The aggregates of {@code rowsRead} that are parked and still have a pending parked row. */
  Set<ClaimedRow.AggregateKey> stillParked(List<ClaimedRow> rowsRead) throws SQLException {
    Set<ClaimedRow.AggregateKey> candidates = new LinkedHashSet<>();
    for (ClaimedRow row : rowsRead) {
      if (parked.contains(row.aggregate())) {
        candidates.add(row.aggregate());
      }
    }
    if (candidates.isEmpty()) {
      return Set.of();
    }
    Set<ClaimedRow.AggregateKey> still = new HashSet<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(stillParkedSql)) {
      Array types =
          c.createArrayOf("text", candidates.stream().map(ClaimedRow.AggregateKey::type).toArray());
      Array ids =
          c.createArrayOf("text", candidates.stream().map(ClaimedRow.AggregateKey::id).toArray());
      ps.setArray(1, types);
      ps.setArray(2, ids);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          still.add(new ClaimedRow.AggregateKey(rs.getString(1), rs.getString(2)));
        }
      }
    }
    // Nothing of theirs is pending in the drainer's hands: back to the fast path.
    for (ClaimedRow.AggregateKey key : candidates) {
      if (!still.contains(key)) {
        parked.remove(key);
      }
    }
    return still;
  }

  /**
   * Records the failures as the table relay does and flags them and the held rows parked, behind
   * the parking fence taken shared, and only while this reader's WAL sender still streams the slot.
   * A reader whose stream died may not park any more: the next one has read, or will read, these
   * events again and, not knowing them parked, would publish them while the drainer did too.
   */
  void recordParking(
      List<Marker.Failure> failures,
      List<Long> positions,
      Map<Long, Long> commitLsns,
      Set<Integer> writers,
      List<ClaimedRow> parkedMessages,
      @Nullable WalMessages messages)
      throws SQLException {
    inWriteTransaction(
        c -> {
          CommittingWriters.awaitVisible(c, writers);
          slot.fence(c, false);
          checks.requireOwnStream(
              slot.readerPid(c),
              "the failures of its last batch are left to the reader that streams it now");
          if (messages != null) {
            // Their rows first: the failures below are recorded on them by id.
            messages.park(c, parkedMessages, commitLsns);
          }
          marker.failed(DSL.using(c, SQLDialect.POSTGRES, settings), failures);
          try (PreparedStatement ps =
              c.prepareStatement(messages != null ? messages.reparkSql() : parkSql)) {
            ps.setArray(1, c.createArrayOf("int8", positions.toArray(Long[]::new)));
            ps.setArray(
                2,
                c.createArrayOf(
                    "int8", positions.stream().map(commitLsns::get).toArray(Long[]::new)));
            ps.executeUpdate();
          }
          return null;
        });
  }

  /**
   * Runs {@code work} in a write transaction of its own on a pool connection, with the relay's
   * timeouts (a partition cannot leave its locks held) and a synchronous commit: the slot may move
   * past a parked row only once its flag is on disk.
   */
  private void inWriteTransaction(Sql.TransactionWork<Void> work) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      Sql.inWriteTransaction(c, Sql.applicationName(log.relayName()) + "-wal", true, work);
    }
  }
}
