package dev.pgoutbox.example.orders;

/**
 * One rejected field of a request, as listed in a problem+json body.
 *
 * @param field the field's JSON path, e.g. {@code items[2].quantity}
 * @param message what is wrong, with the bound and the value seen
 */
public record FieldError(String field, String message) {}
