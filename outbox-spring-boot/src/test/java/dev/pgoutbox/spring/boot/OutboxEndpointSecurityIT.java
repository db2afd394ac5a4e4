package dev.pgoutbox.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.spring.boot.EndpointTests.EndpointLog;
import dev.pgoutbox.spring.boot.EndpointTests.Http;
import dev.pgoutbox.spring.boot.EndpointTests.Response;
import dev.pgoutbox.spring.boot.OutboxEndpointReadOnlyIT.RecordingPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The {@code outbox} endpoint's writes turned on behind the Spring Security filter chain that
 * docs/spring-boot-endpoint.md shows (DocSnippetsTest keeps the page equal to it): anonymous
 * callers, a reader without the role and a wrong password are refused before the endpoint runs, on
 * the endpoint's path and on every variant of it tried, and the dead letter's row stays as it was;
 * the operator's retry and discard succeed and are logged under the operator's name.
 */
@SpringBootTest(
    classes = OutboxEndpointSecurityIT.App.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "pgoutbox.relay.name=boot-endpoint-security",
      "pgoutbox.actuator.writes-enabled=true",
      "management.endpoints.web.exposure.include=health,outbox",
      // This test alone runs with Spring Security (src/test/resources/application.properties).
      "spring.autoconfigure.exclude="
    })
@DirtiesContext
class OutboxEndpointSecurityIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final Duration WITHIN = Duration.ofSeconds(20);
  private static final String OPERATOR = "alice:alice-password";
  private static final String READER = "bob:bob-password";
  private static final String WRONG_PASSWORD = "alice:bob-password";

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

    // snippet:start actuator-security
    @Bean
    SecurityFilterChain actuatorSecurity(HttpSecurity http) throws Exception {
      http.securityMatcher(EndpointRequest.toAnyEndpoint())
          .authorizeHttpRequests(
              requests ->
                  requests
                      .requestMatchers(EndpointRequest.to("health"))
                      .permitAll()
                      .requestMatchers(EndpointRequest.to("outbox").withHttpMethod(HttpMethod.GET))
                      .authenticated()
                      .requestMatchers(EndpointRequest.to("outbox"))
                      .hasRole("OUTBOX_ADMIN")
                      .anyRequest()
                      .authenticated())
          .httpBasic(Customizer.withDefaults())
          .sessionManagement(
              session -> session.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
          // Scripts send their credentials with each request and get no session cookie to forge;
          // the endpoint's writes refuse the request types a cross-site page can send (see above).
          .csrf(csrf -> csrf.ignoringRequestMatchers(EndpointRequest.toAnyEndpoint()));
      return http.build();
    }
    // snippet:end actuator-security
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

  private Http http;
  private EndpointLog log;

  @BeforeEach
  void connect() {
    http = new Http(port);
    log = new EndpointLog();
  }

  @AfterEach
  void detach() {
    log.close();
  }

  @Test
  void writesOfAnonymousCallersReadersAndWrongPasswordsAreRefusedAndTheRowIsUntouched() {
    UUID id = EndpointTests.plantDeadLetter(db, "guarded-1");
    String before = EndpointTests.row(db, id);
    String path = "/actuator/outbox/dead-letters/" + id;
    List<String> paths =
        List.of(
            path,
            path + "/",
            "/actuator//outbox/dead-letters/" + id,
            "/actuator/./outbox/dead-letters/" + id,
            "/actuator/x/../outbox/dead-letters/" + id,
            "/actuator/OUTBOX/dead-letters/" + id,
            "/actuator/outbox/DEAD-LETTERS/" + id,
            "/actuator/outbox/dead%2Dletters/" + id,
            "/actuator/%6Futbox/dead-letters/" + id,
            "/actuator/outbox/dead-letters/" + id + ";jsessionid=x",
            "/actuator/outbox;x=y/dead-letters/" + id,
            "/actuator/outbox/dead-letters%2F" + id,
            path + "?_method=DELETE");
    List<String> granted = new ArrayList<>();
    for (String user : new String[] {null, READER, WRONG_PASSWORD}) {
      for (String method : List.of("POST", "DELETE", "PUT", "PATCH")) {
        for (String target : paths) {
          Response answer = http.send(method, target, user);
          if (answer.status() < 400) {
            granted.add(user + " " + method + " " + target + " -> " + answer.status());
          }
          if (target.equals(path) && (method.equals("POST") || method.equals("DELETE"))) {
            assertThat(answer.status())
                .as("%s %s by %s", method, target, user)
                .isEqualTo(READER.equals(user) ? 403 : 401);
          }
        }
      }
    }
    assertThat(granted).as("writes that got through").isEmpty();
    assertThat(EndpointTests.row(db, id)).as("the dead letter's row").isEqualTo(before);
    assertThat(publisher.published).doesNotContain(id);
    assertThat(log.lines()).as("the endpoint never ran a write").isEmpty();
  }

  @Test
  void readsNeedAnAuthenticatedCallerAndHealthNone() {
    assertThat(http.send("GET", "/actuator/outbox").status()).isEqualTo(401);
    assertThat(http.send("GET", "/actuator/outbox/dead-letters").status()).isEqualTo(401);
    assertThat(http.send("GET", "/actuator/outbox", WRONG_PASSWORD).status()).isEqualTo(401);
    assertThat(http.send("GET", "/actuator/outbox", READER).status()).isEqualTo(200);
    assertThat(http.send("GET", "/actuator/outbox/dead-letters", READER).status()).isEqualTo(200);
    assertThat(http.send("GET", "/actuator/health").status()).isEqualTo(200);
  }

  @Test
  void theOperatorsRetryAndDiscardSucceedAndAreLoggedUnderTheirName() {
    UUID retried = EndpointTests.plantDeadLetter(db, "operated-1");
    UUID discarded = EndpointTests.plantDeadLetter(db, "operated-2");

    Response retry = http.send("POST", "/actuator/outbox/dead-letters/" + retried, OPERATOR);
    assertThat(retry.status()).as(retry.body()).isEqualTo(200);
    assertThat(retry.json().get("found").asBoolean()).isTrue();
    Eventually.await(
        "the retried event published", WITHIN, () -> publisher.published.contains(retried));

    Response discard = http.send("DELETE", "/actuator/outbox/dead-letters/" + discarded, OPERATOR);
    assertThat(discard.status()).as(discard.body()).isEqualTo(200);
    assertThat(discard.json().get("found").asBoolean()).isTrue();
    assertThat(EndpointTests.row(db, discarded)).isNull();

    assertThat(log.lines())
        .anySatisfy(
            line ->
                assertThat(line)
                    .startsWith("INFO ")
                    .contains("Retry of event " + retried + " by alice: 1 row"))
        .anySatisfy(
            line ->
                assertThat(line)
                    .startsWith("WARN ")
                    .contains("Discard of event " + discarded + " by alice: 1 row"));
  }
}
