package dev.pgoutbox.relay.internal;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * A claimed row with the bytes of its payload and headers, and whether they are still to be read
 * (the claim leaves out rows stored larger than its inline size).
 */
record SizedRow(ClaimedRow row, int placeInRun, long bytes, boolean bodyLeftOut) {

  /** {@code row} as the claim returned it, sized from the result set positioned on it. */
  static SizedRow of(ClaimedRow row, ResultSet rs, int placeInRun) throws SQLException {
    long bodyBytes = rs.getLong(ClaimStatements.BODY_BYTES);
    if (rs.wasNull()) {
      // Came inline, within inlineBytes as stored: its length is near enough.
      String headers = row.headers();
      return new SizedRow(
          row,
          placeInRun,
          row.payload().length() + (headers == null ? 0 : headers.length()),
          false);
    }
    return new SizedRow(row, placeInRun, bodyBytes, true);
  }

  /** A run ends before its first row that is not due (left by a mode switch or an admin action). */
  static List<SizedRow> cutAtFirstRowNotDue(List<SizedRow> fetched) {
    List<SizedRow> rows = new ArrayList<>(fetched.size());
    ClaimedRow blocked = null;
    for (SizedRow sized : fetched) {
      ClaimedRow row = sized.row();
      if (blocked != null && blocked.sameAggregate(row)) {
        continue;
      }
      if (!row.due()) {
        blocked = row;
        continue;
      }
      rows.add(sized);
    }
    return rows;
  }
}
