package dev.pgoutbox.relay.internal;

import org.jspecify.annotations.Nullable;

/** Where a claim's scan starts: the low-water mark, or position 0 on a full scan. */
final class ScanWindow {

  private final long settleNanos;
  private final long fullScanEveryNanos;
  private final long fullScanCostFactor;

  /**
   * Claims scan from here. Published rows leave dead entries at the front of the pending index
   * until vacuum removes them (never, while vacuum is off or held back by an old transaction);
   * starting here skips them, so a claim's cost does not grow with the published history.
   *
   * <p>It rises to the first head a claim found only after that head stood for {@link
   * Claimer#SETTLE_NANOS}: a writer that took a lower position but committed a little later (the
   * common late commit, with several writers) is still found by the next claims. Rows below it that
   * become claimable later (a backoff ends, another relay releases an aggregate, a commit later
   * than that) are found by the full scan from position 0 that runs once every {@link
   * Claimer#FULL_SCAN_EVERY_NANOS}: they wait at most that long, and nothing is skipped for good. A
   * claim that finds nothing from the mark on looks from position 0 at once (at most once per
   * settle time): a late commit is announced by its notification, and waiting for the next full
   * scan would add up to a second.
   */
  private long lowWater;

  /** The lowest first head found since {@link #risingSince}: the next value of lowWater. */
  private long risingTo = Long.MAX_VALUE;

  private long risingSince = System.nanoTime();
  private long nextFullScanNanos = System.nanoTime();
  private long lastFullScanNanos = System.nanoTime();
  private long lastFullScanCostNanos;
  private boolean fullScan;

  /** A window with the timing rules of {@code tuning}. */
  ScanWindow(Claimer.Tuning tuning) {
    this.settleNanos = tuning.settleNanos();
    this.fullScanEveryNanos = tuning.fullScanEveryNanos();
    this.fullScanCostFactor = tuning.fullScanCostFactor();
  }

  /** The position this claim's scan starts from: 0 for a full scan, else the low-water mark. */
  long scanFrom() {
    long now = System.nanoTime();
    fullScan = now - nextFullScanNanos >= 0;
    if (fullScan) {
      lastFullScanNanos = now;
      nextFullScanNanos = now + fullScanEveryNanos;
      return 0;
    }
    return lowWater;
  }

  /** Whether the scan {@link #scanFrom} last started is a full scan, from position 0. */
  boolean fullScan() {
    return fullScan;
  }

  /** Makes the next claim a full scan. */
  void fullScanNext() {
    nextFullScanNanos = System.nanoTime();
  }

  /**
   * Whether a claim that found nothing from the low-water mark may look from position 0 at once:
   * not a full scan itself, and the last full scan was at least the settle time ago and at least
   * {@link Claimer#FULL_SCAN_COST_FACTOR} times its cost.
   */
  boolean mayLookFromStart() {
    long sinceFullScan = System.nanoTime() - lastFullScanNanos;
    return !fullScan
        && sinceFullScan >= Math.max(settleNanos, fullScanCostFactor * lastFullScanCostNanos);
  }

  /**
   * A claim that started at {@code started} ended: a full scan's cost pushes the next full scan
   * back to {@link Claimer#FULL_SCAN_COST_FACTOR} times that cost.
   */
  void claimEnded(long started) {
    if (fullScan) {
      lastFullScanCostNanos = System.nanoTime() - started;
      long earliestNext = started + fullScanCostFactor * lastFullScanCostNanos;
      if (earliestNext - nextFullScanNanos > 0) {
        nextFullScanNanos = earliestNext;
      }
    }
  }

  /** See {@link Claimer#committedFrom}. */
  void committedFrom(long position) {
    if (position < lowWater) {
      lowWater = position;
      risingTo = Long.MAX_VALUE;
      risingSince = System.nanoTime();
    }
  }

  /** Moves the low-water mark: down at once, up to a first head only once it has settled. */
  void afterScan(@Nullable Long firstFound) {
    if (firstFound == null) {
      return;
    }
    long now = System.nanoTime();
    if (firstFound < lowWater) {
      lowWater = firstFound;
      risingTo = Long.MAX_VALUE;
      risingSince = now;
      return;
    }
    risingTo = Math.min(risingTo, firstFound);
    if (now - risingSince >= settleNanos) {
      lowWater = risingTo;
      risingTo = Long.MAX_VALUE;
      risingSince = now;
    }
  }
}
