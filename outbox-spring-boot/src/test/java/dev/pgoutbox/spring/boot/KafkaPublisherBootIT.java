package dev.pgoutbox.spring.boot;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.kafka.KafkaPublisher;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@code pgoutbox.publisher.type=kafka} in a Boot application against a Kafka broker started in the
 * test JVM: with spring-boot-kafka the producer takes Boot's {@code spring.kafka.*}; without it,
 * {@code pgoutbox.publisher.kafka.bootstrap-servers}.
 */
@SpringBootTest(
    classes = KafkaPublisherBootIT.App.class,
    properties = {
      "pgoutbox.publisher.type=kafka",
      "pgoutbox.publisher.kafka.topic-prefix=boot-it.",
      "pgoutbox.relay.name=boot-kafka"
    })
@DirtiesContext
class KafkaPublisherBootIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  static EmbeddedKafka kafka;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Orders.class)
  static class App {}

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db);
    registry.add("spring.kafka.bootstrap-servers", () -> kafka.bootstrapServers());
  }

  @BeforeAll
  static void broker() throws Exception {
    db.execute(Orders.TABLE_DDL.formatted(db.schema()));
    kafka = EmbeddedKafka.start();
    kafka.createTopic("boot-it.order", 1);
    kafka.createTopic("boot-it-plain", 1);
  }

  @AfterAll
  static void stopTheRelayThenTheBroker(@Autowired OutboxRelayLifecycle relay) throws Exception {
    relay.stop(); // before the schema is dropped
    kafka.close();
  }

  @Autowired Orders orders;
  @Autowired Publisher publisher;

  @Test
  void commitPublishesWithBootsKafkaSettingsAndRollbackPublishesNothing() {
    assertThat(publisher).isInstanceOf(KafkaPublisher.class);

    assertThatThrownBy(() -> orders.place("k-rolled-back", true))
        .hasMessageContaining("payment refused");
    UUID committed = orders.place("k-committed", false);

    List<ConsumerRecord<String, byte[]>> records = read("boot-it.order", 1);
    ConsumerRecord<String, byte[]> record = records.get(0);
    assertThat(record.key()).isEqualTo("k-committed");
    assertThat(header(record, KafkaPublisher.EVENT_ID_HEADER)).isEqualTo(committed.toString());
    assertThat(new String(record.value(), UTF_8))
        .isEqualToIgnoringWhitespace("{\"id\":\"k-committed\"}");

    Eventually.await(
        "the committed event marked processed",
        Duration.ofSeconds(15),
        () -> count(db.schema(), "processed_at IS NULL") == 0);
    assertThat(count(db.schema(), "aggregate_id = 'k-rolled-back'")).isZero();
    assertThat(read("boot-it.order", 1)).as("nothing but the committed event").hasSize(1);
  }

  @Test
  void withoutSpringBootKafkaThePublishersOwnBootstrapServersAreUsed() {
    String schema = db.schema() + "_plain";
    new ApplicationContextRunner()
        .withClassLoader(
            new FilteredClassLoader("org.springframework.kafka", "org.springframework.boot.kafka"))
        .withConfiguration(
            AutoConfigurations.of(
                DataSourceAutoConfiguration.class,
                DataSourceTransactionManagerAutoConfiguration.class,
                TransactionAutoConfiguration.class,
                PgOutboxAutoConfiguration.class))
        .withPropertyValues(
            "spring.datasource.url=" + db.jdbcUrl(),
            "spring.datasource.hikari.maximum-pool-size=2",
            "pgoutbox.schema=" + schema,
            "pgoutbox.relay.name=boot-kafka-plain",
            "pgoutbox.relay.poll-interval=200ms",
            "pgoutbox.publisher.type=kafka",
            "pgoutbox.publisher.kafka.bootstrap-servers=" + kafka.bootstrapServers(),
            "pgoutbox.publisher.kafka.topic=boot-it-plain")
        .run(
            context -> {
              assertThat(context).hasNotFailed();
              assertThat(context.getBean(Publisher.class)).isInstanceOf(KafkaPublisher.class);
              UUID id =
                  context
                      .getBean(TransactionTemplate.class)
                      .execute(
                          status ->
                              context
                                  .getBean(SpringOutbox.class)
                                  .append(
                                      OutboxEvent.of(
                                          "invoice", "i-1", "invoice.sent", Map.of("n", 1))));
              ConsumerRecord<String, byte[]> record = read("boot-it-plain", 1).get(0);
              assertThat(record.key()).isEqualTo("i-1");
              assertThat(header(record, KafkaPublisher.EVENT_ID_HEADER))
                  .isEqualTo(String.valueOf(id));
            });
    db.execute("DROP SCHEMA " + schema + " CASCADE");
  }

  /** Reads {@code topic} from the start until {@code expected} records came, or fails. */
  private static List<ConsumerRecord<String, byte[]>> read(String topic, int expected) {
    List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed"),
            new StringDeserializer(),
            new ByteArrayDeserializer())) {
      TopicPartition partition = new TopicPartition(topic, 0);
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (records.size() < expected && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(records::add);
      }
      long end = consumer.endOffsets(List.of(partition)).get(partition);
      assertThat(records)
          .as("records of %s (end offset %d)", topic, end)
          .hasSizeGreaterThanOrEqualTo(expected);
      assertThat(end).as("records in %s", topic).isEqualTo(records.size());
    }
    return records;
  }

  private static String header(ConsumerRecord<String, byte[]> record, String name) {
    return new String(record.headers().lastHeader(name).value(), UTF_8);
  }

  private static long count(String schema, String where) {
    return db.queryLong("SELECT count(*) FROM " + schema + ".outbox_events WHERE " + where);
  }
}
