package dev.pgoutbox.spring.boot;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.relay.OutboxStats;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The {@code pgoutbox} health indicator: DOWN when the relay of this application should run and
 * does not, when the outbox cannot be read, or when a threshold of {@code pgoutbox.health.*} is
 * passed; details {@code relayRunning}, {@code pending}, {@code oldestPendingAge}, {@code
 * deadLetters}, {@code blockedAggregates}.
 */
public final class OutboxHealthIndicator extends AbstractHealthIndicator {

  private final OutboxAdmin admin;
  private final @Nullable OutboxRelayLifecycle relay;
  private final PgOutboxProperties.Health thresholds;

  /**
   * An indicator reading {@code admin}'s stats; {@code relay} is null when this application runs no
   * relay.
   */
  public OutboxHealthIndicator(
      OutboxAdmin admin,
      @Nullable OutboxRelayLifecycle relay,
      PgOutboxProperties.Health thresholds) {
    super("pgoutbox health check failed");
    this.admin = requireNonNull(admin, "admin");
    this.relay = relay;
    this.thresholds = requireNonNull(thresholds, "thresholds");
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    OutboxStats stats = admin.stats();
    builder.up();
    if (relay != null) {
      boolean running = relay.isRunning();
      builder.withDetail("relayRunning", running);
      if (!running) {
        builder.down();
      }
    }
    builder
        .withDetail("pending", stats.pending())
        .withDetail("oldestPendingAge", stats.oldestPendingAge().toString())
        .withDetail("deadLetters", stats.deadLetters())
        .withDetail("blockedAggregates", stats.blockedAggregates());
    if (thresholds.getMaxOldestPendingAge() != null
        && stats.oldestPendingAge().compareTo(thresholds.getMaxOldestPendingAge()) > 0) {
      builder
          .down()
          .withDetail("maxOldestPendingAge", thresholds.getMaxOldestPendingAge().toString());
    }
    if (thresholds.getMaxDeadLetters() != null
        && stats.deadLetters() > thresholds.getMaxDeadLetters()) {
      builder.down().withDetail("maxDeadLetters", thresholds.getMaxDeadLetters());
    }
  }
}
