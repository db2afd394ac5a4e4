package dev.pgoutbox.spring.boot;

import java.time.Instant;
import org.jspecify.annotations.Nullable;

/**
 * What one relay of this application did since it last started, as {@link
 * OutboxRelayLifecycle#activity()} reports it (the {@code outbox} endpoint shows it per relay).
 *
 * @param published events published and marked
 * @param retried failed attempts scheduled for a retry
 * @param deadLettered events dead-lettered
 * @param lastBatchAt when the last batch that claimed events committed; null before the first
 * @param lastDatabaseError the last database error the relay backed off from; null if none
 * @param lastDatabaseErrorAt when that error happened; null if none
 */
public record RelayActivity(
    long published,
    long retried,
    long deadLettered,
    @Nullable Instant lastBatchAt,
    @Nullable String lastDatabaseError,
    @Nullable Instant lastDatabaseErrorAt) {

  /** Nothing yet. */
  public static final RelayActivity NONE = new RelayActivity(0, 0, 0, null, null, null);
}
