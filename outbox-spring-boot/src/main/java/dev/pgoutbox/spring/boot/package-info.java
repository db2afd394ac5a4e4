/**
 * Spring Boot auto-configuration of pgoutbox: {@link dev.pgoutbox.spring.boot.SpringOutbox} (an
 * outbox that joins the current Spring transaction), the relay as a {@code SmartLifecycle}, the
 * schema migration at start-up, a health indicator and Micrometer metrics, all under the {@code
 * pgoutbox.*} properties of {@link dev.pgoutbox.spring.boot.PgOutboxProperties}. See
 * docs/spring-boot.md.
 */
@NullMarked
package dev.pgoutbox.spring.boot;

import org.jspecify.annotations.NullMarked;
