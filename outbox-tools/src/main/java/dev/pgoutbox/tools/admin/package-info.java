/**
 * The on-call command line: {@code java -jar pgoutbox-tools.jar admin status|dead-letters|show|
 * retry|discard}, on {@link dev.pgoutbox.admin.OutboxAdmin}, where every rule of what an operator
 * may see and touch lives.
 */
@NullMarked
package dev.pgoutbox.tools.admin;

import org.jspecify.annotations.NullMarked;
