/**
 * The pgoutbox schema: Flyway migrations at {@code classpath:db/pgoutbox/migration}, the jOOQ
 * classes generated from them ({@code dev.pgoutbox.db.jooq}), and {@link
 * dev.pgoutbox.db.OutboxSchema} to apply them into a schema of the host's choosing.
 */
@NullMarked
package dev.pgoutbox.db;

import org.jspecify.annotations.NullMarked;
