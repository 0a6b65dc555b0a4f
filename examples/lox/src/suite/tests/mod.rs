mod check;
