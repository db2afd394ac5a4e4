package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Writers that commit while another writer's commit is notifying send no notification of their own
 * (notifying commits cannot share a disk flush, so the trigger lets one notify at a time). These
 * tests hold writers at the points that matter, with {@code SET CONSTRAINTS ALL IMMEDIATE} so that
 * the trigger's locks are taken at the insert and kept until the test commits, and a relay whose
 * poll interval is an hour: only its wake-up protocol can publish the silent writers' events.
 */
class SilentCommitIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private final List<Connection> writers = new ArrayList<>();
  private final List<String> receivedSoFar = new ArrayList<>();
  private ScheduledExecutorService executor;
  private Connection observer;
  private PGConnection notifications;

  @BeforeEach
  void setUp() throws SQLException {
    db.execute("truncate outbox_events");
    executor = Executors.newScheduledThreadPool(1, Thread.ofVirtual().factory());
    observer = db.connect();
    observer.setAutoCommit(true);
    try (Statement listen = observer.createStatement()) {
      listen.execute("LISTEN \"" + OutboxSchema.notifyChannel(db.schema()) + "\"");
    }
    notifications = observer.unwrap(PGConnection.class);
  }

  @AfterEach
  void tearDown() throws SQLException {
    for (Connection writer : writers) {
      writer.close();
    }
    observer.close();
    executor.shutdownNow();
  }

  @Test
  void writerCommittingAfterTheRelayWokeUpIsPublishedWithoutANotificationOfItsOwn()
      throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    try (OutboxRelay relay = relay(publisher, Duration.ofHours(1))) {
      relay.start();
      awaitListening();

      Connection announcer = writer();
      Connection early = writer();
      Connection late = writer();
      EventRows.insert(dsl(announcer), "announcer", 1);
      EventRows.insert(dsl(early), "early", 1);
      EventRows.insert(dsl(late), "late", 1);

      early.commit();
      assertThat(notificationsReceived())
          .as("a writer committing beside the announcer stays silent")
          .isEmpty();

      announcer.commit();
      assertThat(Eventually.holdsWithin(() -> publisher.published("early"), 10))
          .as("the announcer's notification woke the relay")
          .isTrue();

      // The relay has claimed while this writer was committing; its commit notifies nobody.
      late.commit();
      assertThat(Eventually.holdsWithin(() -> publisher.published("late"), 10))
          .as("published within the relay's recheck, not at the hourly poll")
          .isTrue();
      assertThat(publisher.delivered()).hasSize(3);
      assertThat(notificationsReceived()).hasSize(1);
    }
  }

  @Test
  void notificationsAreOnePerCommitThatFoundNoOtherCommitting() throws Exception {
    Connection first = writer();
    Connection second = writer();
    long firstPosition = positionOf(EventRows.insert(dsl(first), "a", 1), first);
    EventRows.insert(dsl(second), "b", 1);
    first.commit();
    second.commit();

    Connection alone = writer();
    long alonePosition = positionOf(EventRows.insert(dsl(alone), "c", 1), alone);
    alone.commit();

    assertThat(notificationsReceived())
        .as("the first announced its position, the second committed beside it, the third alone")
        .containsExactly(Long.toString(firstPosition), Long.toString(alonePosition));
  }

  @Test
  void lateCommitAnnouncesItsPositionEvenBesideAnotherNotifyingCommit() throws Exception {
    Connection announcer = writer();
    Connection late = writer("0 seconds");
    long announcerPosition = positionOf(EventRows.insert(dsl(announcer), "a", 1), announcer);
    long latePosition = positionOf(EventRows.insert(dsl(late), "b", 1), late);
    late.commit();
    announcer.commit();

    assertThat(notificationsReceived())
        .as("a relay's low-water mark may have passed a late commit: it always says where it wrote")
        .containsExactly(Long.toString(latePosition), Long.toString(announcerPosition));
  }

  @Test
  void announcerThatRollsBackLeavesTheSilentWriterToTheNextPoll() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    try (OutboxRelay relay = relay(publisher, Duration.ofMillis(300))) {
      relay.start();
      awaitListening();

      Connection announcer = writer();
      Connection silent = writer();
      EventRows.insert(dsl(announcer), "rolled-back", 1);
      EventRows.insert(dsl(silent), "silent", 1);
      silent.commit();
      announcer.rollback();

      assertThat(Eventually.holdsWithin(() -> publisher.published("silent"), 10)).isTrue();
      assertThat(publisher.published("rolled-back")).isFalse();
      assertThat(notificationsReceived()).isEmpty();
    }
  }

  private OutboxRelay relay(RecordingPublisher publisher, Duration pollInterval) {
    return OutboxRelay.builder()
        .name("silent")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .executor(executor)
        .listenConnectionFactory(
            ListenConnectionFactory.of(db.jdbcUrl() + "&ApplicationName=silent", new Properties()))
        .config(RelayConfig.builder().pollInterval(pollInterval).build())
        .build();
  }

  /** The relay's first poll runs at start; after it the relay is idle and listening. */
  private void awaitListening() throws InterruptedException {
    assertThat(
            Eventually.holdsWithin(
                () ->
                    db.listeningSessions("application_name = 'pgoutbox-relay-silent-listen'") == 1,
                10))
        .isTrue();
  }

  /**
   * A writer transaction whose notify trigger runs at each insert rather than at commit, and that
   * counts as late (and so always notifies) only after an hour.
   */
  private Connection writer() throws SQLException {
    return writer("1 hour");
  }

  private Connection writer(String lateCommitNotifyAfter) throws SQLException {
    Connection connection = db.connect();
    try (Statement statement = connection.createStatement()) {
      statement.execute("SET pgoutbox.late_commit_notify_after = '" + lateCommitNotifyAfter + "'");
    }
    connection.setAutoCommit(false);
    try (Statement statement = connection.createStatement()) {
      statement.execute("SET CONSTRAINTS ALL IMMEDIATE");
    }
    writers.add(connection);
    return connection;
  }

  private DSLContext dsl(Connection connection) {
    return DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
  }

  private static long positionOf(java.util.UUID id, Connection connection) throws SQLException {
    try (var statement =
        connection.prepareStatement("select position from outbox_events where id = ?")) {
      statement.setObject(1, id);
      try (var result = statement.executeQuery()) {
        result.next();
        return result.getLong(1);
      }
    }
  }

  /** Payloads of the notifications sent so far; a round trip first collects what has arrived. */
  private List<String> notificationsReceived() throws SQLException {
    try (Statement statement = observer.createStatement()) {
      statement.execute("SELECT 1");
    }
    List<String> payloads = new ArrayList<>();
    PGNotification[] arrived = notifications.getNotifications();
    if (arrived != null) {
      for (PGNotification notification : arrived) {
        payloads.add(notification.getParameter());
      }
    }
    receivedSoFar.addAll(payloads);
    return List.copyOf(receivedSoFar);
  }
}
