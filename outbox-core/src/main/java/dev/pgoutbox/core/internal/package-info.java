/**
 * Implementation of {@code dev.pgoutbox.core}. Not an API: anything here may change in any release.
 */
@NullMarked
package dev.pgoutbox.core.internal;

import org.jspecify.annotations.NullMarked;
