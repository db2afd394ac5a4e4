package dev.pgoutbox.testing;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SecretsTest {

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "jdbc:postgresql://db:5432/app?user=app&password=s3cret"
            + " | jdbc:postgresql://db:5432/app?user=app&password=***",
        "jdbc:postgresql://db/app?password=s3cret&user=app"
            + " | jdbc:postgresql://db/app?password=***&user=app",
        "jdbc:postgresql://db/app?user=app&PASSWORD=s3cret&sslpassword=k3y&ssl=true"
            + " | jdbc:postgresql://db/app?user=app&PASSWORD=***&sslpassword=***&ssl=true",
        "jdbc:postgresql://app:s3cret@db:5432/app | jdbc:postgresql://app:***@db:5432/app",
        "amqp://app:s3cret@rabbit:5672/vhost | amqp://app:***@rabbit:5672/vhost",
        "amqps://app:p@ss:w0rd@rabbit | amqps://app:***@rabbit",
        "nats://app:s3cret@nats1:4222,nats://app:s3cret@nats2:4222"
            + " | nats://app:***@nats1:4222,nats://app:***@nats2:4222",
        "nats://s3cret-token@nats:4222 | nats://***@nats:4222",
        "amqp://guest@rabbit:5672 | amqp://guest@rabbit:5672",
        "http://hooks.example.com/path?x=1&token=abc | http://hooks.example.com/path?x=1&token=***",
        "jdbc:postgresql://db:5432/app?user=app | jdbc:postgresql://db:5432/app?user=app",
        "localhost:9092,kafka2:9092 | localhost:9092,kafka2:9092",
        "Kafka localhost:9092, topic orders | Kafka localhost:9092, topic orders",
        "user@example.com wrote | user@example.com wrote",
      })
  void masksPasswordsAndTokensAndLeavesTheRest(String raw, String masked) {
    assertThat(Secrets.mask(raw)).isEqualTo(masked);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "jdbc:postgresql://db/app?user=app&password=s3cret",
        "amqp://app:s3cret@rabbit:5672",
        "nats://app:s3cret@nats:4222",
        "nats://s3cret@nats:4222",
        "jdbc:postgresql://db/app?password=s3cret",
      })
  void theSecretNeverSurvives(String raw) {
    assertThat(Secrets.mask(raw)).doesNotContain("s3cret");
  }
}
