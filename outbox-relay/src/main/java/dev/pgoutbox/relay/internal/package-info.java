/** The relay's internals: claim, publish, mark, wake-up. Not an API; may change in any release. */
@NullMarked
package dev.pgoutbox.relay.internal;

import org.jspecify.annotations.NullMarked;
