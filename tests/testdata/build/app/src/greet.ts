/** A greeting, and a text that would end an inline script unescaped. */
export interface Greeting {
  text: string;
  tricky: string;
}

/** Greets `name`. */
export function greet(name: string): Greeting {
  return {
    text: `Hello, ${name}`,
    tricky: "</script><!-- <script> --></SCRIPT >",
  };
}
