package dev.pgoutbox.relay.wal;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.internal.WalSlotQuery;
import java.util.regex.Pattern;

/** The rules for the WAL relay's slot and publication names, and the default slot name. */
final class WalNames {

  private static final Pattern SLOT_NAME = Pattern.compile("[a-z0-9_]{1,63}");

  private WalNames() {}

  /** The default slot name of the outbox in {@code schema}: {@code pgoutbox_<schema>}. */
  static String defaultName(String schema) {
    return WalSlotQuery.defaultName(schema);
  }

  /** Whether {@code value} may name a slot or a publication. */
  static boolean valid(String value) {
    return SLOT_NAME.matcher(value).matches();
  }

  /** {@code value}, checked as the builder's setting {@code what}. */
  static String requireSlotName(String what, String value) {
    requireNonNull(value, what + " must not be null");
    if (!SLOT_NAME.matcher(value).matches()) {
      throw new IllegalArgumentException(
          what + " must be 1 to 63 lowercase letters, digits or '_', was '" + value + "'");
    }
    return value;
  }
}
