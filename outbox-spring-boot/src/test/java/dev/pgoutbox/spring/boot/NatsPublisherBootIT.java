package dev.pgoutbox.spring.boot;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.core.consumer.NatsEventIds;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.nats.NatsPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.nats.client.Connection;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code pgoutbox.publisher.type=nats} in a Boot application: the publisher connected from {@code
 * pgoutbox.publisher.nats.*}, an event committed in a {@code @Transactional} method read back from
 * a JetStream stream on the machine's NATS.
 */
@SpringBootTest(
    classes = NatsPublisherBootIT.App.class,
    properties = {"pgoutbox.publisher.type=nats", "pgoutbox.relay.name=boot-nats"})
@DirtiesContext
class NatsPublisherBootIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  static final String PREFIX = "pgoutbox-boot-it-" + UUID.randomUUID().toString().substring(0, 8);
  static Connection nats;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Orders.class)
  static class App {}

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db);
    registry.add("pgoutbox.publisher.nats.servers", () -> BootTests.NATS_URL);
    registry.add("pgoutbox.publisher.nats.subject-prefix", () -> PREFIX);
  }

  @BeforeAll
  static void stream() throws Exception {
    db.execute(Orders.TABLE_DDL.formatted(db.schema()));
    nats = Nats.connect(BootTests.NATS_URL);
    nats.jetStreamManagement()
        .addStream(
            StreamConfiguration.builder()
                .name(PREFIX)
                .subjects(PREFIX + ".>")
                .storageType(StorageType.Memory)
                .build());
  }

  @AfterAll
  static void stopTheRelayThenDropTheStream(@Autowired OutboxRelayLifecycle relay)
      throws Exception {
    relay.stop(); // before the schema is dropped
    nats.jetStreamManagement().deleteStream(PREFIX);
    nats.close();
  }

  @Autowired Orders orders;
  @Autowired Publisher publisher;

  @Test
  void commitPublishesToJetStreamAndRollbackPublishesNothing() throws Exception {
    assertThat(publisher).isInstanceOf(NatsPublisher.class);
    JetStreamSubscription subscription =
        nats.jetStream()
            .subscribe(PREFIX + ".>", PushSubscribeOptions.builder().stream(PREFIX).build());

    assertThatThrownBy(() -> orders.place("n-rolled-back", true))
        .hasMessageContaining("payment refused");
    UUID committed = orders.place("n-committed", false);

    Message message = subscription.nextMessage(Duration.ofSeconds(30));
    assertThat(message).as("the committed event, from JetStream").isNotNull();
    assertThat(message.getSubject()).isEqualTo(PREFIX + ".order.order.placed");
    assertThat(message.getHeaders().getFirst(NatsEventIds.HEADER)).isEqualTo(committed.toString());
    assertThat(new String(message.getData(), UTF_8))
        .isEqualToIgnoringWhitespace("{\"id\":\"n-committed\"}");

    Eventually.await(
        "the committed event marked processed",
        Duration.ofSeconds(15),
        () -> count("processed_at IS NULL") == 0);
    assertThat(count("aggregate_id = 'n-rolled-back'")).isZero();
    assertThat(nats.jetStreamManagement().getStreamInfo(PREFIX).getStreamState().getMsgCount())
        .as("nothing but the committed event in the stream")
        .isOne();
  }

  private static long count(String where) {
    return db.queryLong("SELECT count(*) FROM " + db.schema() + ".outbox_events WHERE " + where);
  }
}
