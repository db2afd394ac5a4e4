package dev.pgoutbox.relay.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

class NatsPublisherTest {

  private static OutboxMessage message(String aggregateType, String eventType) {
    return new OutboxMessage(
        UUID.randomUUID(), 1, aggregateType, "a-1", eventType, "{}", Map.of(), 1, Instant.now());
  }

  @Test
  void defaultSubjectIsPrefixAggregateTypeEventType() {
    assertThat(NatsRouting.byTypes("outbox").subject(message("order", "order.created")))
        .isEqualTo("outbox.order.order.created");
  }

  @Test
  void wildcardsAndWhitespaceInTypesAreEscapedAndCannotWidenTheSubject() {
    assertThat(NatsRouting.byTypes("outbox").subject(message("my order", "*.>")))
        .isEqualTo("outbox.my%20order.%2A.%3E");
    assertThat(NatsRouting.byTypes("outbox").subject(message("order", "tab\tform\fnbsp\u00A0")))
        .isEqualTo("outbox.order.tab%09form%0Cnbsp%C2%A0");
  }

  @Test
  void aDottedAggregateTypeCannotPublishIntoAnotherTypesSubjects() {
    NatsRouting routing = NatsRouting.byTypes("outbox");
    assertThat(routing.subject(message("a.b", "c"))).isEqualTo("outbox.a%2Eb.c");
    assertThat(routing.subject(message("a", "b.c"))).isEqualTo("outbox.a.b.c");
  }

  @Test
  void escapedAndReplacementLookalikesStayApart() {
    NatsRouting routing = NatsRouting.byTypes("outbox");
    assertThat(routing.subject(message("x", "a*"))).isEqualTo("outbox.x.a%2A");
    assertThat(routing.subject(message("x", "a%2A"))).isEqualTo("outbox.x.a%252A");
    assertThat(routing.subject(message("x", "a_"))).isEqualTo("outbox.x.a_");
  }

  @Test
  void dotsThatWouldMakeAnEmptyTokenAreEscaped() {
    NatsRouting routing = NatsRouting.byTypes("outbox");
    assertThat(routing.subject(message("x", ".a..b."))).isEqualTo("outbox.x.%2Ea.%2Eb%2E");
    assertThat(routing.subject(message("x", "..."))).isEqualTo("outbox.x.%2E%2E%2E");
  }

  @Test
  void anEmptyTypeFromARowWrittenByHandNamesTheField() {
    assertThatThrownBy(() -> NatsRouting.byTypes("outbox").subject(message("", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("aggregateType ''")
        .hasMessageContaining("empty");
  }

  /**
   * Every pair of types from an alphabet of the characters that matter maps to a literal subject,
   * and distinct pairs to distinct subjects: percent-decoding the subject gives the pair back.
   */
  @Test
  void theDefaultSubjectIsLiteralAndGivesItsTypesBack() {
    String alphabet = "a.%*> \t_2";
    Random random = new Random(20260611);
    NatsRouting routing = NatsRouting.byTypes("p.q");
    Map<String, List<String>> seen = new HashMap<>();
    for (int i = 0; i < 20_000; i++) {
      String aggregateType = randomText(random, alphabet);
      String eventType = randomText(random, alphabet);
      String subject = routing.subject(message(aggregateType, eventType));
      assertThat(NatsSubjects.problem(subject)).as(subject).isNull();
      assertThat(subject).startsWith("p.q.");
      String rest = subject.substring("p.q.".length());
      int dot = rest.indexOf('.');
      assertThat(decode(rest.substring(0, dot))).isEqualTo(aggregateType);
      assertThat(decode(rest.substring(dot + 1))).isEqualTo(eventType);
      List<String> pair = List.of(aggregateType, eventType);
      List<String> before = seen.putIfAbsent(subject, pair);
      assertThat(before == null || before.equals(pair))
          .as(subject + " " + before + " " + pair)
          .isTrue();
    }
  }

  @Test
  void aSubjectIsLiteralOnlyWithoutWildcardsEmptyTokensOrWhitespace() {
    assertThat(NatsSubjects.problem("outbox.order.created")).isNull();
    assertThat(NatsSubjects.problem("outbox.*")).contains("token 2").contains("'*'");
    assertThat(NatsSubjects.problem("outbox.>")).contains("token 2").contains("'>'");
    assertThat(NatsSubjects.problem("outbox.a>b")).contains("'>'");
    assertThat(NatsSubjects.problem("outbox..x")).contains("token 2 is empty");
    assertThat(NatsSubjects.problem("outbox.")).contains("token 2 is empty");
    assertThat(NatsSubjects.problem(".outbox")).contains("token 1 is empty");
    assertThat(NatsSubjects.problem("")).contains("empty");
    assertThat(NatsSubjects.problem("a\fb")).contains("U+000C");
    assertThat(NatsSubjects.problem("a\u2003b")).contains("U+2003");
  }

  private static String randomText(Random random, String alphabet) {
    StringBuilder b = new StringBuilder();
    int length = 1 + random.nextInt(5);
    for (int i = 0; i < length; i++) {
      b.append(alphabet.charAt(random.nextInt(alphabet.length())));
    }
    return b.toString();
  }

  private static String decode(String escaped) {
    return URLDecoder.decode(escaped.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  @Test
  void refusesAPrefixThatIsNotASubject() {
    assertThatThrownBy(() -> NatsRouting.byTypes("out box"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'out box'");
    assertThatThrownBy(() -> NatsRouting.byTypes("outbox."))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'outbox.'")
        .hasMessageContaining("token 2 is empty");
  }

  @Test
  void anAckTimeoutIsRetryable() {
    assertThat(NatsPublisher.classify(new TimeoutException(), "s.x"))
        .isInstanceOfSatisfying(
            PublishResult.Retryable.class,
            r -> assertThat(r.reason()).contains("s.x").contains("no JetStream ack"));
  }
}
