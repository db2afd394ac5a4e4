package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.spring.boot.OutboxEndpointReadOnlyIT.RecordingPublisher;
import dev.pgoutbox.testing.BrowserScript;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The web console served by the starter at a configured path, behind Spring Security as
 * docs/console.md shows, driven in headless Chromium: the operator (role OUTBOX_ADMIN) sees the
 * planted dead letter, retries it (the relay publishes it) and discards another; a signed-in user
 * without the role and a cross-site page are refused, and the event they aimed at stays dead.
 */
@SpringBootTest(
    classes = ConsoleBrowserBootIT.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "pgoutbox.relay.name=boot-console",
      "pgoutbox.console.enabled=true",
      "pgoutbox.console.path=/ops/outbox",
      "pgoutbox.console.writes-enabled=true",
      // This test runs with Spring Security (src/test/resources/application.properties).
      "spring.autoconfigure.exclude="
    })
@DirtiesContext
class ConsoleBrowserBootIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path BROWSER = Path.of("../outbox-tools/src/test/browser");

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    RecordingPublisher publisher() {
      return new RecordingPublisher();
    }

    @Bean
    UserDetailsService users() {
      return new InMemoryUserDetailsManager(
          User.withUsername("alice").password("{noop}alice-password").roles("OUTBOX_ADMIN").build(),
          User.withUsername("bob").password("{noop}bob-password").roles("OUTBOX_READER").build());
    }

    // snippet:start console-security
    @Bean
    SecurityFilterChain consoleSecurity(HttpSecurity http) throws Exception {
      http.securityMatcher("/ops/outbox", "/ops/outbox/**")
          .authorizeHttpRequests(requests -> requests.anyRequest().authenticated())
          .httpBasic(Customizer.withDefaults())
          // The console refuses cross-site writes itself (JSON only, its own header, same origin).
          .csrf(csrf -> csrf.ignoringRequestMatchers("/ops/outbox/api/**"));
      return http.build();
    }
    // snippet:end console-security
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db);
  }

  @AfterAll
  static void stopTheRelay(@Autowired OutboxRelayLifecycle relay) {
    relay.stop(); // before the schema is dropped
  }

  @Value("${local.server.port}")
  int port;

  @Autowired RecordingPublisher publisher;

  @Test
  void theOperatorRetriesAndDiscardsFromThePageAndAUserWithoutTheRoleIsRefused() throws Exception {
    UUID dead = EndpointTests.plantDeadLetter(db, "<img src=x onerror=\"window.__pwned=1\">");
    UUID discarded = EndpointTests.plantDeadLetter(db, "boot-7");
    UUID untouched = EndpointTests.plantDeadLetter(db, "boot-9");

    Path screenshots = Path.of("target/console-screenshots").toAbsolutePath();
    Files.createDirectories(screenshots);
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("writeUrl", "http://127.0.0.1:" + port + "/ops/outbox/");
    config.put("deadId", dead.toString());
    config.put("discardId", discarded.toString());
    config.put("untouchedId", untouched.toString());
    config.put("untouchedAggregateType", "order");
    config.put("untouchedAggregateId", "boot-9");
    config.put("screenshots", screenshots.toString());
    config.put("userDataDir", Files.createTempDirectory("pgoutbox-chromium").toString());
    config.put("auth", Map.of("username", "alice", "password", "alice-password"));
    config.put("noRoleAuth", Map.of("username", "bob", "password", "bob-password"));
    Path configFile = Files.createTempFile("console-test", ".json");
    JSON.writeValue(configFile.toFile(), config);

    String output =
        BrowserScript.run(BROWSER.resolve("console-test.mjs"), configFile, Duration.ofMinutes(4));
    JsonNode seen = JSON.readTree(output);
    assertThat(seen.path("ok").asBoolean()).as(output).isTrue();

    assertThat(seen.get("overviewDeadLetters").asText()).isEqualTo("3");
    assertThat(seen.get("mode").asText()).isEqualTo("writes enabled");
    assertThat(seen.get("xssAggregateText").asText())
        .isEqualTo("order/<img src=x onerror=\"window.__pwned=1\">");
    assertThat(seen.get("injectedElements").asInt()).isZero();
    assertThat(seen.get("pwned").asBoolean()).isFalse();
    assertThat(seen.get("pageErrors")).as(output).isEmpty();
    assertThat(seen.get("eventPayloadHidden").asInt()).isEqualTo(1);
    assertThat(seen.get("relaysText").asText()).contains("boot-console");

    assertThat(seen.at("/retry/flash").asText()).startsWith("Retried 1 of 1");
    Eventually.await(
        "the relay to publish the retried event", () -> publisher.published.contains(dead));
    assertThat(seen.at("/discard/flash").asText()).startsWith("Discarded 1 of 1");
    assertThat(seen.get("filteredRowId").asText()).isEqualTo(untouched.toString());
    assertThat(EndpointTests.row(db, discarded)).isNull();

    assertThat(seen.get("crossSiteFetch").asText()).startsWith("blocked");
    assertThat(seen.get("crossSiteFormStatus").asInt()).isEqualTo(403);
    assertThat(seen.get("crossSiteFormBody").asText()).contains("cross-site");
    assertThat(seen.get("unauthorizedMode").asText()).isEqualTo("writes need a token or role");
    assertThat(seen.at("/unauthorized/error").asBoolean()).isTrue();
    assertThat(seen.at("/unauthorized/flash").asText()).contains("bob lacks role OUTBOX_ADMIN");
    assertThat(
            db.queryLong(
                "select count(*) from "
                    + db.schema()
                    + ".outbox_events where id = '"
                    + untouched
                    + "' and dead_at is not null"))
        .isEqualTo(1);
    assertThat(publisher.published).doesNotContain(untouched);
  }
}
