package dev.pgoutbox.docs.snippets;

import static dev.pgoutbox.docs.snippets.Shop.INVOICES;

import dev.pgoutbox.core.Inbox;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/** docs/inbox.md. */
final class InboxSnippets {

  private InboxSnippets() {}

  static boolean handleOnce(DSLContext dsl, UUID eventId, byte[] payload) {
    // snippet:start handle-once
    Inbox inbox = Inbox.builder().schema("outbox").build(); // immutable and thread-safe

    // in the message listener; eventId from the broker's dedup key
    // (Kafka header, AMQP message-id, Nats-Msg-Id)
    boolean ran =
        dsl.transactionResult(
            tx ->
                inbox.handleOnce(
                    tx.dsl(),
                    "billing",
                    eventId,
                    () -> tx.dsl().insertInto(INVOICES).set(invoiceFor(payload)).execute()));
    // then acknowledge the message, whether ran or not
    // snippet:end handle-once
    return ran;
  }

  static ScheduledFuture<?> retention(
      Inbox inbox, DataSource dataSource, ScheduledExecutorService executor) {
    // snippet:start retention
    long deleted = inbox.purgeProcessed(dataSource, Duration.ofDays(14), 1_000);
    // or every hour on the host's executor (cancel the future to stop):
    ScheduledFuture<?> retention =
        inbox.scheduleRetention(
            executor, dataSource, Duration.ofHours(1), Duration.ofDays(14), 1_000);
    // snippet:end retention
    return deleted >= 0 ? retention : retention;
  }

  private static Record invoiceFor(byte[] payload) {
    return DSL.using(SQLDialect.POSTGRES).newRecord(DSL.field(DSL.name("amount"), Integer.class));
  }
}
