import { buildMessage, ValidateBy, ValidationOptions } from 'class-validator';
import { ID_MAX_LENGTH, isPrintableId } from '../../common/printable';

export const IS_PRINTABLE_ID = 'isPrintableId';

/**
 * An id the API stores and shows as itself: 1–`maxLength` characters of printable text, the rule
 * the webhook route applies to the ids it records (common/printable). A control or format
 * character, a line separator or a lone surrogate would make the stored row read as something else.
 * Put it above `@IsString()`, so a missing or non-string value keeps that message.
 */
export function IsPrintableId(maxLength: number = ID_MAX_LENGTH, validationOptions?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: IS_PRINTABLE_ID,
      constraints: [maxLength],
      validator: {
        validate: (value: unknown) => isPrintableId(value, maxLength),
        defaultMessage: buildMessage(
          (eachPrefix) => `${eachPrefix}$property must be printable text of at most ${maxLength} characters`,
          validationOptions,
        ),
      },
    },
    validationOptions,
  );
}
