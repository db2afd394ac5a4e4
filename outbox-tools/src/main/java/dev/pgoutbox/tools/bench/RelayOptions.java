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
      description =
          "mark or delete (default mark; the WAL relay of --source wal: its own default, delete,"
              + " unless given)")
  String completion;

  String completion() {
    return completion != null ? completion : "mark";
  }
}
