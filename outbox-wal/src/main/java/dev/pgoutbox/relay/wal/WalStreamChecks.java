package dev.pgoutbox.relay.wal;

import java.sql.SQLException;
import org.jspecify.annotations.Nullable;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;

/**
 * The reader's checks on its stream (its WAL sender still streams the slot, the publication is as
 * it was at attach) and the confirmations to the slot they allow.
 */
final class WalStreamChecks {

  private final WalSlot slot;
  private int streamPid;
  private long lastStreamCheck;
  private @Nullable String publicationBaseline;
  private long verifiedLsn;
  private long checkedReceived;
  private long lastPublicationCheck;
  private long sentAck;

  /** The checks of the reader of {@code slot}. */
  WalStreamChecks(WalSlot slot) {
    this.slot = slot;
  }

  /** A stream started, served by the WAL sender {@code pid}. */
  void streamStarted(int pid) {
    streamPid = pid;
    lastStreamCheck = System.nanoTime();
  }

  /**
   * The new stream confirms from nothing, and checks the publication against {@code baseline}, read
   * before it started.
   */
  void attached(String baseline) {
    sentAck = 0;
    publicationBaseline = baseline;
    verifiedLsn = 0;
    checkedReceived = 0;
    lastPublicationCheck = System.nanoTime();
  }

  /**
   * Every {@link WalReader#STREAM_CHECK_EVERY}, while idle: fails (and the reader attaches again)
   * when the slot is no longer streamed by this reader's WAL sender.
   */
  void checkStillStreaming() throws SQLException {
    long now = System.nanoTime();
    if (now - lastStreamCheck < WalReader.STREAM_CHECK_EVERY.toNanos()) {
      return;
    }
    lastStreamCheck = now;
    requireOwnStream(slot.readerPid(), "the connection died silently");
    requireSamePublication();
  }

  /** The publication's fingerprint; drift when it does not stream every insert of the table. */
  String requireIntactPublication() throws SQLException {
    WalSlot.PublicationState state = slot.publicationState();
    if (state == null) {
      throw new PublicationDriftException("publication " + slot.publicationName() + " was dropped");
    }
    if (state.problem() != null) {
      throw new PublicationDriftException(state.problem());
    }
    return state.fingerprint();
  }

  /** Drift unless the publication is as it was when this reader attached. */
  void requireSamePublication() throws SQLException {
    String now = requireIntactPublication();
    if (!now.equals(publicationBaseline)) {
      throw new PublicationDriftException(
          "publication "
              + slot.publicationName()
              + " was altered, dropped or re-created while the reader streamed it (its catalog"
              + " rows changed): the inserts written meanwhile may have been left out of the slot");
    }
  }

  /**
   * The highest LSN up to {@code wanted} the slot may be confirmed to. Every {@link
   * WalReader#PUBLICATION_CHECK_EVERY} the publication is checked; one found unchanged lets the
   * slot move up to what had been received at the check before it. A change committed before an LSN
   * was received is seen by the next check at the latest, even when it became visible a moment
   * after its commit record was written (as a commit waiting for a synchronous standby does).
   */
  private long confirmable(PGReplicationStream current, long wanted) throws SQLException {
    if (wanted > verifiedLsn) {
      long now = System.nanoTime();
      if (now - lastPublicationCheck >= WalReader.PUBLICATION_CHECK_EVERY.toNanos()) {
        long received = current.getLastReceiveLSN().asLong();
        requireSamePublication();
        lastPublicationCheck = now;
        verifiedLsn = Math.max(verifiedLsn, checkedReceived);
        checkedReceived = received;
      }
    }
    return Math.min(wanted, verifiedLsn);
  }

  /**
   * Fails (and the reader attaches again) unless {@code pid}, the WAL sender streaming the slot
   * now, is this reader's; {@code consequence} ends the message.
   */
  void requireOwnStream(@Nullable Integer pid, String consequence) throws SQLException {
    if (pid == null || pid != streamPid) {
      throw new SQLException(
          "the server no longer streams replication slot "
              + slot.slotName()
              + " to this reader (its WAL sender "
              + streamPid
              + " is gone"
              + (pid == null ? "" : ", process " + pid + " streams it")
              + "): "
              + consequence);
    }
  }

  /** Confirms the slot up to {@code wanted}, or as far towards it as the checks allow. */
  void confirm(PGReplicationStream current, long wanted) throws SQLException {
    long confirmed = confirmable(current, wanted);
    if (confirmed > sentAck) {
      setAck(current, confirmed);
    }
  }

  private void setAck(PGReplicationStream current, long lsn) {
    LogSequenceNumber value = LogSequenceNumber.valueOf(lsn);
    current.setFlushedLSN(value);
    current.setAppliedLSN(value);
    sentAck = lsn;
  }

  /**
   * The publication no longer streams every insert of the outbox table whole, or changed while the
   * reader streamed it: the slot may have skipped events, which only the table still knows.
   */
  static final class PublicationDriftException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PublicationDriftException(String message) {
      super(message);
    }
  }
}
