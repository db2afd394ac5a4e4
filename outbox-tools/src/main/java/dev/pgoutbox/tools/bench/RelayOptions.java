package dev.pgoutbox.tools.bench;

import picocli.CommandLine.Option;

/** How many relays drain, and how. */
public final class RelayOptions {

  @Option(
      names = "--relays",
      defaultValue = "1",
      description = "Relays, each with its own connections (default ${DEFAULT-VALUE})")
  int relays = 1;

  @Option(
      names = "--ordering",
      defaultValue = "strict",
      description = "strict or unordered (default ${DEFAULT-VALUE})")
  String ordering = "strict";

  @Option(
      names = "--completion",
      defaultValue = "mark",
      description = "mark or delete (default ${DEFAULT-VALUE})")
  String completion = "mark";
}
