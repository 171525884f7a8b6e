/** WordNet exception lists shipped by wink-lexicon (irregular form → base form). */
declare module 'wink-lexicon/src/wn-noun-exceptions.js' {
  const exceptions: Record<string, string>;
  export default exceptions;
}
declare module 'wink-lexicon/src/wn-verb-exceptions.js' {
  const exceptions: Record<string, string>;
  export default exceptions;
}
declare module 'wink-lexicon/src/lexicon.js' {
  const lexicon: Record<string, string[]>;
  export default lexicon;
}
