// Vite's `?raw` imports (a file's text as a string), as vite/client declares them, for the tests that use them.
declare module '*?raw' {
  const text: string;
  export default text;
}
