package dev.pgoutbox.relay.internal;

import java.net.URI;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Takes the credentials out of URLs before they go into an error: the user info ({@code
 * user:pass@}) becomes {@code ***@}, every query value becomes {@code ***} ({@code
 * ?token=***&page=***}), a fragment becomes {@code #***}; scheme, host, port and path stay. The one
 * redaction of the relay: the webhook publisher builds its messages with {@link #url}, and the
 * relay passes every failure reason of every publisher through {@link #text} before it stores it in
 * {@code last_error} or logs it. Path segments are not redacted (a secret belongs in a header, the
 * query or the user info). Stateless and thread-safe.
 */
public final class UrlRedaction {

  /** What a secret is replaced with: {@value}. */
  public static final String MASK = "***";

  /**
   * A URL in free text: a scheme, {@code ://}, and everything up to white space or a character that
   * cannot be in a URL unescaped and usually closes a quotation.
   */
  private static final Pattern URL = Pattern.compile("(?i)\\b[a-z][a-z0-9+.\\-]*://[^\\s\"'<>`]+");

  /** Characters that usually end a sentence or a quotation rather than the URL. */
  private static final String TRAILING = ".,;:!)]}";

  private UrlRedaction() {}

  /** {@code uri} as text, its user info, query values and fragment replaced by {@value #MASK}. */
  public static String url(URI uri) {
    return redactOne(uri.toString());
  }

  /**
   * {@code text} with each URL in it redacted as {@link #url} does; text without a URL is returned
   * unchanged.
   */
  public static String text(String text) {
    if (text.indexOf("://") < 0) {
      return text;
    }
    Matcher m = URL.matcher(text);
    StringBuilder out = new StringBuilder(text.length());
    int last = 0;
    while (m.find()) {
      int end = m.end();
      while (end > m.start() && TRAILING.indexOf(text.charAt(end - 1)) >= 0) {
        end--;
      }
      out.append(text, last, m.start()).append(redactOne(text.substring(m.start(), end)));
      last = end;
    }
    return out.append(text, last, text.length()).toString();
  }

  /** One URL (or what looks like one), redacted. */
  private static String redactOne(String url) {
    int query = indexOfAny(url, "?#", 0);
    String head = query < 0 ? url : url.substring(0, query);
    String tail = query < 0 ? "" : url.substring(query);
    int authority = head.indexOf("://");
    if (authority >= 0) {
      // Everything up to the last '@' before the query is user info, even where the path seems to
      // start earlier: a password with an unescaped '/' is still a password.
      int at = head.lastIndexOf('@');
      if (at > authority) {
        head = head.substring(0, authority + 3) + MASK + head.substring(at);
      }
    } else if (head.indexOf('@') >= 0 && head.indexOf('/') < 0) {
      // user:pass@host without a scheme.
      head = MASK + head.substring(head.lastIndexOf('@'));
    }
    return head + redactTail(tail);
  }

  /** {@code ?query#fragment} with every query value and the fragment masked. */
  private static String redactTail(String tail) {
    if (tail.isEmpty()) {
      return tail;
    }
    int hash = tail.indexOf('#');
    String query = hash < 0 ? tail : tail.substring(0, hash);
    StringBuilder out = new StringBuilder(tail.length());
    if (!query.isEmpty()) {
      out.append('?');
      String[] parameters = query.substring(1).split("[&;]", -1);
      for (int i = 0; i < parameters.length; i++) {
        if (i > 0) {
          out.append('&');
        }
        String p = parameters[i];
        int eq = p.indexOf('=');
        if (eq >= 0) {
          out.append(p, 0, eq + 1).append(MASK);
        } else if (!p.isEmpty()) {
          out.append(MASK); // ?s3cret: a bare value
        }
      }
    }
    if (hash >= 0) {
      out.append('#').append(MASK);
    }
    return out.toString();
  }

  private static int indexOfAny(String s, String chars, int from) {
    for (int i = from; i < s.length(); i++) {
      if (chars.indexOf(s.charAt(i)) >= 0) {
        return i;
      }
    }
    return -1;
  }
}
