package dev.pgoutbox.testing;

import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Masks the secrets of connection strings before they are logged, printed or shown by {@code GET
 * /health}: password-like parameters of JDBC URLs ({@code password=...}, {@code sslpassword=...})
 * and the password of {@code user:password@host} in any URI ({@code amqp://}, {@code nats://},
 * {@code jdbc:postgresql://}). A NATS URI's userinfo without a colon is a token and is masked
 * whole.
 *
 * <pre>{@code
 * Secrets.mask("jdbc:postgresql://db:5432/app?user=app&password=s3cret")
 *     // jdbc:postgresql://db:5432/app?user=app&password=***
 * Secrets.mask("amqp://app:s3cret@rabbit:5672")   // amqp://app:***@rabbit:5672
 * }</pre>
 *
 * <p>Stateless and thread-safe.
 */
public final class Secrets {

  /** What a secret is replaced with. */
  public static final String MASK = "***";

  private static final Pattern SECRET_PARAMETER =
      Pattern.compile(
          "(?i)([?&;]\\s*(?:password|sslpassword|pass|pwd|secret|token|access_token|api_key"
              + "|apikey|sslkeypassword)\\s*=)[^&;\\s]*");

  /**
   * {@code scheme://userinfo@}, the userinfo being everything up to the last '@' of the authority.
   */
  private static final Pattern USERINFO =
      Pattern.compile("(?i)([a-z][a-z0-9+.-]*)://([^/?#\\s,]*)@");

  private static final Set<String> TOKEN_SCHEMES = Set.of("nats", "tls", "ws", "wss");

  private Secrets() {}

  /**
   * {@code uri} with its passwords and tokens replaced by {@value #MASK}; null stays null. Text
   * without a secret is returned unchanged.
   */
  public static @Nullable String mask(@Nullable String uri) {
    if (uri == null) {
      return null;
    }
    String masked = SECRET_PARAMETER.matcher(uri).replaceAll("$1" + Matcher.quoteReplacement(MASK));
    Matcher userinfo = USERINFO.matcher(masked);
    StringBuilder out = new StringBuilder();
    while (userinfo.find()) {
      String scheme = userinfo.group(1);
      String info = userinfo.group(2);
      int colon = info.indexOf(':');
      String replacement;
      if (colon >= 0) {
        replacement = info.substring(0, colon) + ":" + MASK;
      } else if (TOKEN_SCHEMES.contains(scheme.toLowerCase(Locale.ROOT))) {
        replacement = MASK;
      } else {
        replacement = info; // a user name alone is no secret
      }
      userinfo.appendReplacement(out, Matcher.quoteReplacement(scheme + "://" + replacement + "@"));
    }
    userinfo.appendTail(out);
    return out.toString();
  }
}
