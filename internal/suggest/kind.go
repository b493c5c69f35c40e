package suggest

import "reflect"

// KindWord names the kind of value a config key of type t takes, as an
// operator reads it in "want …, got …" ("a whole number", "a duration like
// \"15s\"", "a list").
func KindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t.String() == "time.Duration" {
			return `a duration like "15s"`
		}
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	default:
		return t.String()
	}
}
