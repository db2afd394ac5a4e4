/**
 * The code of the pages, one class per page, compiled with the build: each region between {@code //
 * snippet:start name} and {@code // snippet:end name} is the block the page shows after {@code <!--
 * snippet: path#name -->} ({@code DocSnippetsTest} checks they are equal). Setup stays outside the
 * regions; the regions are what a reader copies.
 */
@NullMarked
package dev.pgoutbox.docs.snippets;

import org.jspecify.annotations.NullMarked;
