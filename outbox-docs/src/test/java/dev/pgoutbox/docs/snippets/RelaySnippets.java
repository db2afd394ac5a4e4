package dev.pgoutbox.docs.snippets;

import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.relay.micrometer.MicrometerRelayMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.Executors;
import org.apache.kafka.clients.producer.Producer;

/** docs/relay.md. */
final class RelaySnippets {

  private RelaySnippets() {}

  static void relay(
      HikariDataSource hikari, Producer<String, byte[]> producer, MeterRegistry registry) {
    // snippet:start relay
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("orders") // log prefix, metric tag, application_name
            .dataSource(hikari) // the host's pool; one connection per batch
            .schema("outbox")
            .publisher(KafkaPublisher.builder(producer).build())
            .executor(Executors.newScheduledThreadPool(2, Thread.ofVirtual().factory()))
            .config(RelayConfig.builder().batchSize(500).build())
            .listener(new MicrometerRelayMetrics(registry, "orders"))
            .build();
    relay.start(); // logs its effective configuration once
    runTheApplication();
    relay
        .close(); // = stop(30 s): the batch in flight finishes (or is rolled back); nothing is lost
    // snippet:end relay
  }

  private static void runTheApplication() {}
}
