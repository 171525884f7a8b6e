/** How many rows a console list shows per page (the API's own default page size). */
export const PAGE_SIZE = 20;
